// Stage 2: numerics on the shipped models (every GGUF that models/limits.json declares
// limits for). For each model: both builds against the transformers reference logits within
// the declared limits, with --validate-prefill (batched prefill against token-by-token
// decoding); the candidate no worse than the baseline by more than a tenth of the declared
// mean-KL limit; and the candidate against the baseline's own logits within the same limits.
// Whether the two builds' logits are bit-identical is recorded: then serving must give the same
// answers token for token (stage 3). And the candidate's speculative decoding (`gufo run --spec
// ngram`) must write what it writes without drafts, greedy and sampled.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

#include "qualify/json_access.h"
#include "qualify/plot.h"
#include "qualify/stages.h"

namespace gufo::qualify {

namespace {

namespace fs = std::filesystem;

struct Quality {
  bool ran = false;
  double kl_mean = 0, kl_p99 = 0, kl_max = 0, top1 = 0, mean_nll = 0;
};

struct ModelFiles {
  std::string name;  // "gufo-tiny-q8_0"
  fs::path gguf, text, reference;
  double max_mean_kl = 0;
};

// models/reference/NAME.{txt,npy} belong to every quantization of NAME: the file name without
// its last "-type" part ("gufo-tiny-q4_k_m" -> "gufo-tiny").
Result<ModelFiles> model_files(const Context& context, const std::string& file, const nlohmann::json& limits) {
  ModelFiles m;
  m.name = fs::path(file).stem().string();
  const std::string base = m.name.substr(0, m.name.rfind('-'));
  m.gguf = context.source("models/" + file);
  m.text = context.source("models/reference/" + base + ".txt");
  m.reference = context.source("models/reference/" + base + ".npy");
  m.max_mean_kl = limits.value("max_mean_kl", 0.0);
  std::error_code ec;
  for (const fs::path& p : {m.gguf, m.text, m.reference}) {
    if (!fs::exists(p, ec)) return Error{p.string() + ": missing (named by models/limits.json, entry " + file + ")"};
  }
  if (!(m.max_mean_kl > 0)) return Error{"models/limits.json: " + file + ": no max_mean_kl"};
  return m;
}

// `gufo quality --json`; not `ran` when a number is missing or not finite (a NaN prints as
// null), so that such a run fails its check rather than passing with zeros.
Quality parse_quality(const fs::path& path) {
  Quality q;
  auto text = read_text(path.string());
  if (!text) return q;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  const nlohmann::json& kl = member(j, "kl");
  const std::optional<double> values[] = {finite(member(kl, "mean")), finite(member(kl, "p99")),
                                          finite(member(kl, "max")), finite(member(j, "top1_agreement")),
                                          finite(member(j, "mean_nll"))};
  for (const std::optional<double>& v : values) {
    if (!v) return q;
  }
  q = {true, *values[0], *values[1], *values[2], *values[3], *values[4]};
  return q;
}

nlohmann::json to_json(const Quality& q) {
  return {
      {"kl_mean", q.kl_mean}, {"kl_p99", q.kl_p99}, {"kl_max", q.kl_max}, {"top1", q.top1}, {"mean_nll", q.mean_nll}};
}

std::string numbers(const Quality& q) {
  std::ostringstream s;
  s.precision(3);
  s << "KL mean " << q.kl_mean << ", p99 " << q.kl_p99 << ", top-1 " << q.top1 << ", NLL " << q.mean_nll;
  return s.str();
}

// `gufo quality` of one build against a reference, within the limits; extra flags appended.
Check quality_check(Context& context, const Build& build, const ModelFiles& m, const fs::path& reference,
                    const std::string& what, const std::vector<std::string>& extra, Quality& quality) {
  std::vector<std::string> argv = {build.gufo.string(),
                                   "quality",
                                   "-m",
                                   m.gguf.string(),
                                   "--text",
                                   m.text.string(),
                                   "--reference",
                                   reference.string(),
                                   "--limits",
                                   context.source("models/limits.json").string(),
                                   "--json"};
  for (const std::string& flag : context.device_flags()) argv.push_back(flag);
  for (const std::string& flag : extra) argv.push_back(flag);
  Check check{m.name + ": " + what, Verdict::Fail, ""};
  auto run =
      context.run(build.role + "-quality-" + m.name + (reference == m.reference ? "" : "-vs-baseline"), argv, 600);
  if (!run) {
    check.detail = run.error().message;
    return check;
  }
  quality = parse_quality(run->out);
  check.detail = quality.ran ? numbers(quality) : "no finite KL, top-1 and NLL in its JSON";
  if (run->succeeded() && quality.ran) {
    check.verdict = Verdict::Pass;
  } else {
    check.detail += (check.detail.empty() ? "" : "; ") + run->why();
  }
  return check;
}

Check save_baseline_logits(Context& context, const ModelFiles& m, const fs::path& logits) {
  std::vector<std::string> argv = {context.baseline.gufo.string(),
                                   "quality",
                                   "-m",
                                   m.gguf.string(),
                                   "--text",
                                   m.text.string(),
                                   "--save-logits",
                                   logits.string()};
  for (const std::string& flag : context.device_flags()) argv.push_back(flag);
  Check check{m.name + ": baseline logits saved", Verdict::Fail, ""};
  auto run = context.run("baseline-logits-" + m.name, argv, 600);
  if (run && run->succeeded()) check.verdict = Verdict::Pass;
  check.detail = run ? (run->succeeded() ? logits.filename().string() : run->why()) : run.error().message;
  return check;
}

// One model: five checks, and its numbers in stage.data["models"][name].
bool qualify_model(Context& context, StageResult& stage, const ModelFiles& m) {
  Quality base, cand, cross;
  const std::vector<std::string> validate = {"--validate-prefill"};
  stage.checks.push_back(quality_check(context, context.baseline, m, m.reference,
                                       "baseline within limits, prefill "
                                       "validated",
                                       validate, base));
  stage.checks.push_back(quality_check(context, context.candidate, m, m.reference,
                                       "candidate within limits, prefill "
                                       "validated",
                                       validate, cand));
  Check no_worse{m.name + ": candidate no worse than baseline", Verdict::Skip, "needs both builds' KL"};
  if (base.ran && cand.ran) {
    const double allowed = base.kl_mean + 0.1 * m.max_mean_kl;
    std::ostringstream s;
    s.precision(3);
    s << "KL mean " << cand.kl_mean << " against the baseline's " << base.kl_mean << " (allowed up to " << allowed
      << ": a tenth of the limit " << m.max_mean_kl << " above it)";
    no_worse = {no_worse.name, cand.kl_mean <= allowed ? Verdict::Pass : Verdict::Fail, s.str()};
  }
  stage.checks.push_back(no_worse);
  const fs::path logits = context.work / ("baseline-" + m.name + ".npy");
  stage.checks.push_back(save_baseline_logits(context, m, logits));
  bool identical = false;
  if (stage.checks.back().verdict == Verdict::Pass) {
    stage.checks.push_back(
        quality_check(context, context.candidate, m, logits, "candidate against baseline logits", {}, cross));
    identical = cross.ran && cross.kl_max == 0 && cross.top1 == 1;
    if (identical) stage.checks.back().detail += " (bit-identical)";
  }
  stage.data["models"][m.name] = {{"baseline_vs_reference", to_json(base)},   {"candidate_vs_reference", to_json(cand)},
                                  {"candidate_vs_baseline", to_json(cross)},  {"bit_identical", identical},
                                  {"ran", base.ran && cand.ran && cross.ran}, {"max_mean_kl", m.max_mean_kl}};
  return identical;
}

// A prompt that repeats itself, so that prompt-lookup drafts are proposed and kept.
constexpr const char* kRepetitivePrompt =
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n";

// "A of D drafted tokens accepted" in `gufo run`'s stderr: A and D (0, 0 when absent).
std::pair<int64_t, int64_t> drafts_kept(const std::string& err) {
  const std::string mark = "speculative: ";
  const size_t at = err.find(mark);
  long long kept = 0;
  long long drafted = 0;
  if (at != std::string::npos && std::sscanf(err.c_str() + at + mark.size(), "%lld of %lld", &kept, &drafted) == 2) {
    return {kept, drafted};
  }
  return {0, 0};
}

// The candidate's `gufo run` on the shipped MODEL at TEMPERATURE, with n-gram drafts or not:
// its text, and in `kept`/`drafted` what it said of its drafts; or why it failed. `draft_always`:
// the revision has --draft-min, so every step proposes all the lookup finds, up to 8, whatever
// drafts cost on this machine (the check is of what drafting gives: the same drafts each run,
// and a loaded machine must not turn drafting off).
Result<std::string> spec_run(const Context& context, const std::string& model, const std::string& temperature,
                             bool drafts, bool draft_always, int64_t& kept, int64_t& drafted) {
  std::vector<std::string> argv = {context.candidate.gufo.string(),
                                   "run",
                                   "-m",
                                   context.source("models/" + model + ".gguf").string(),
                                   "-p",
                                   kRepetitivePrompt,
                                   "-n",
                                   "96",
                                   "--temp",
                                   temperature,
                                   "--seed",
                                   "5",
                                   "--spec",
                                   drafts ? "ngram" : "none"};
  if (drafts && draft_always) argv.insert(argv.end(), {"--draft-max", "8", "--draft-min", "8"});
  for (const std::string& flag : context.device_flags()) argv.push_back(flag);
  const std::string name = "spec-" + model + "-t" + temperature + (drafts ? "-ngram" : "-none");
  auto run = context.run(name, argv, 300);
  if (!run) return Error{name + ": " + run.error().message};
  if (!run->succeeded()) return Error{name + ": " + run->why()};
  if (drafts) {
    if (auto err = read_text(run->err.string())) {
      const auto [k, d] = drafts_kept(*err);
      kept += k;
      drafted += d;
    }
  }
  return read_text(run->out.string());
}

// With and without --spec ngram on the shipped models, greedy and sampled with a seed: the
// same text (batch-invariant kernels leave drafting only the speed to change), with drafts
// kept (otherwise nothing was checked).
Check speculative_check(const Context& context) {
  Check check{"speculative decoding: the same text with and without drafts, drafts kept", Verdict::Fail, ""};
  auto help_run = context.run("candidate-run-help", {context.candidate.gufo.string(), "run", "--help"}, 60);
  if (!help_run || !help_run->succeeded()) {
    check.detail = "gufo run --help: " + (help_run ? help_run->why() : help_run.error().message);
    return check;
  }
  auto help = read_text(help_run->out.string());
  if (!help || help->find("--spec") == std::string::npos) {
    check.verdict = Verdict::Skip;
    check.detail = "this revision has no speculative decoding (`gufo run` has no --spec)";
    return check;
  }
  const bool draft_always = help->find("--draft-min") != std::string::npos;
  int64_t kept = 0;
  int64_t drafted = 0;
  int runs = 0;
  for (const char* model : {"gufo-tiny-q8_0", "gufo-tiny-moe-q8_0"}) {
    for (const char* temperature : {"0", "0.8"}) {
      auto plain = spec_run(context, model, temperature, false, draft_always, kept, drafted);
      auto drafts = plain ? spec_run(context, model, temperature, true, draft_always, kept, drafted) : plain;
      if (!drafts) {
        check.detail = drafts.error().message;
        return check;
      }
      ++runs;
      if (*plain != *drafts) {
        check.detail = std::string(model) + " at temperature " + temperature +
                       ": the text with --spec ngram differs from the text without (logs/spec-*)";
        return check;
      }
    }
  }
  if (kept == 0) {
    check.detail = "no draft was kept in " + std::to_string(runs) + " runs: nothing was checked";
    return check;
  }
  check.verdict = Verdict::Pass;
  check.detail = "the same text in " + std::to_string(runs) + " runs; " + std::to_string(kept) + " of " +
                 std::to_string(drafted) + " drafted tokens kept";
  return check;
}

void plot_kl(const Context& context, StageResult& stage) {
  std::ostringstream data;
  data << "model baseline_vs_reference candidate_vs_reference candidate_vs_baseline\n";
  for (const auto& [name, m] : stage.data["models"].items()) {
    if (!m.value("ran", false)) continue;  // nothing to draw (and 1e-12 means identical)
    // A log scale has no 0: bit-identical logits are drawn at 1e-12.
    const auto kl = [&](const char* key) { return std::max(m[key].value("kl_mean", 0.0), 1e-12); };
    data << name << ' ' << kl("baseline_vs_reference") << ' ' << kl("candidate_vs_reference") << ' '
         << kl("candidate_vs_baseline") << '\n';
  }
  Plot plot{"numerics.png", "Mean KL per model (log scale; 1e-12: identical)", "mean KL", /*log_y=*/true};
  if (auto file = draw_bars(context.out, context.work, plot, data.str())) stage.plots.push_back(*file);
}

}  // namespace

StageResult run_numerics_stage(Context& context) {
  StageResult stage;
  stage.number = 2;
  stage.name = "numerics";
  auto limits_text = read_text(context.source("models/limits.json").string());
  const nlohmann::json limits =
      limits_text ? nlohmann::json::parse(*limits_text, nullptr, false) : nlohmann::json(nullptr);
  if (!limits.is_object()) {
    stage.checks.push_back({"models/limits.json", Verdict::Fail, "missing or not a JSON object"});
    stage.conclude();
    return stage;
  }
  bool all_identical = true;
  int models = 0;
  for (const auto& [file, model_limits] : limits.items()) {
    if (fs::path(file).extension() != ".gguf") continue;
    auto m = model_files(context, file, model_limits);
    if (!m) {
      stage.checks.push_back({file, Verdict::Fail, m.error().message});
      all_identical = false;
      continue;
    }
    ++models;
    all_identical = qualify_model(context, stage, *m) && all_identical;
  }
  if (models == 0) stage.checks.push_back({"shipped models", Verdict::Fail, "models/limits.json declares no model"});
  context.logits_identical = models > 0 && all_identical;
  stage.data["logits_identical"] = context.logits_identical;
  stage.checks.push_back(speculative_check(context));
  stage.checks.push_back({"synthetic real-shape models", Verdict::Skip,
                          "not checked yet: no limits files are declared for `gufo synth` models"});
  if (models > 0) plot_kl(context, stage);
  stage.conclude();
  return stage;
}

}  // namespace gufo::qualify
