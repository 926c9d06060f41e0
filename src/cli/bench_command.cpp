// `gufo bench -m M.gguf [-p 64,512] [-n 128] [-d 0,4096] [-r 3] [-o md|json] [-t N]`: prefill
// (pp) and decode (tg) throughput at context depth d, llama-bench style: each test runs -r
// times after one warm-up and reports tokens/s mean ± stdev. Token ids are random (seeded),
// as llama-bench's are; the depth is filled untimed before each run.
// Decode steps take the greedy token on the device (Session::eval_greedy), as a generation
// loop that samples greedily does.
// With --spec ngram|draft (--draft-model D, --draft-max, --draft-min), the tg test instead
// runs the generation loop itself (engine::generate, greedy) after a code prompt, once plainly
// and once with drafts, and reports both and the drafts kept: the speed-up of speculative
// decoding on this model and machine (random tokens would give lookups nothing to find).
// Tested by tests/unit/engine/cli_test.cpp; numbers go to BENCHMARKS.md.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/backend_flags.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/generation_flags.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/model_draft.h"

namespace gufo::cli {

namespace {

struct BenchOptions {
  std::string model_path;
  std::string prompts = "512";
  int32_t n_gen = 128;
  std::string depths = "0";
  int32_t reps = 3;
  std::string output = "md";
  BackendFlags backend;
  SpecFlags spec;
};

// NOTE(bench): a code continuation, where prompt lookup finds the most (session 25's serving
// benchmark uses the same kind of prompt).
constexpr const char* kSpecPrompt =
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * "
    "b\n\ndef div(a, b):\n";

Result<std::vector<int64_t>> parse_list(const std::string& text, const char* flag, int64_t min) {
  std::vector<int64_t> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const long long value = std::stoll(item, &used);
      if (used != item.size() || value < min) throw std::invalid_argument(item);
      values.push_back(value);
    } catch (const std::exception&) {
      return Error{std::string(flag) + " " + text + ": expected comma-separated integers >= " + std::to_string(min)};
    }
  }
  if (values.empty()) return Error{std::string(flag) + ": empty list"};
  return values;
}

struct TestResult {
  std::string name;
  int64_t n_prompt = 0, n_gen = 0, depth = 0;
  std::vector<double> tokens_per_s;
  int64_t drafted = 0, accepted = 0;  // a speculative tg test's drafts, over its timed runs
  double mean() const {
    double sum = 0;
    for (double v : tokens_per_s) sum += v;
    return sum / static_cast<double>(tokens_per_s.size());
  }
  double stdev() const {
    if (tokens_per_s.size() < 2) return 0.0;
    const double m = mean();
    double sq = 0;
    for (double v : tokens_per_s) sq += (v - m) * (v - m);
    return std::sqrt(sq / static_cast<double>(tokens_per_s.size() - 1));
  }
};

using Clock = std::chrono::steady_clock;

// The test's name, and for a speculative one the share of its drafts that were kept.
std::string test_label(const TestResult& r) {
  if (r.drafted == 0) return r.name;
  char kept[64];
  std::snprintf(kept, sizeof kept, " (%.0f%% of %lld drafts kept)",
                100.0 * static_cast<double>(r.accepted) / static_cast<double>(r.drafted),
                static_cast<long long>(r.drafted));
  return r.name + kept;
}

// `n` token ids drawn uniformly from the model's vocabulary, as llama-bench's are.
std::vector<int32_t> random_tokens(int64_t n, const engine::Model& model, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(model.hparams().n_vocab - 1));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = token(rng);
  return ids;
}

// Fills `depth` positions of the session with random tokens, 512 a batch (untimed).
Status fill_depth(engine::Session& session, int64_t depth, const engine::Model& model, std::mt19937& rng) {
  for (int64_t filled = 0; filled < depth;) {
    const int64_t chunk = std::min<int64_t>(512, depth - filled);
    GUFO_RETURN_IF_ERROR(session.eval(random_tokens(chunk, model, rng), false));
    filled += chunk;
  }
  return {};
}

// One run: fill `depth` untimed, then time `n_prompt` tokens as one batch or `n_gen` decode steps.
Result<double> run_once(const engine::Model& model, backend::Backend& backend, DType cache_type, int64_t depth,
                        int64_t n_prompt, int64_t n_gen, std::mt19937& rng) {
  const int64_t n_ctx = depth + std::max(n_prompt, n_gen);
  GUFO_ASSIGN_OR_RETURN(engine::Session session, engine::Session::create(model, backend, n_ctx, cache_type));
  GUFO_RETURN_IF_ERROR(fill_depth(session, depth, model, rng));
  if (n_prompt > 0) {
    const std::vector<int32_t> prompt = random_tokens(n_prompt, model, rng);
    const auto start = Clock::now();
    GUFO_RETURN_IF_ERROR(session.eval(prompt, false));
    return static_cast<double>(n_prompt) / std::chrono::duration<double>(Clock::now() - start).count();
  }
  const std::vector<int32_t> steps = random_tokens(n_gen, model, rng);
  const auto start = Clock::now();
  for (int32_t id : steps) GUFO_RETURN_IF_ERROR(session.eval_greedy(std::span<const int32_t>(&id, 1)));
  return static_cast<double>(n_gen) / std::chrono::duration<double>(Clock::now() - start).count();
}

// A generation of n_gen tokens (greedy, through engine::generate) after the code prompt at
// `depth` (filled with random tokens, untimed): tokens/s from the first logits on, as gufo run
// reports it.
struct GenerateRun {
  double tokens_per_s = 0;
  int64_t drafted = 0, accepted = 0;
};

Result<GenerateRun> generate_once(const engine::Model& model, backend::Backend& backend,
                                  const tokenizer::Tokenizer& tok, DType cache_type, int64_t depth, int64_t n_gen,
                                  const engine::SpecOptions& spec, std::mt19937& rng) {
  const std::vector<int32_t> prompt = tok.encode(kSpecPrompt, /*parse_special=*/false);
  const int64_t n_ctx = depth + static_cast<int64_t>(prompt.size()) + n_gen + 1;
  GUFO_ASSIGN_OR_RETURN(engine::Session session, engine::Session::create(model, backend, n_ctx, cache_type));
  GUFO_RETURN_IF_ERROR(fill_depth(session, depth, model, rng));
  engine::GenerateOptions options;
  options.n_predict = static_cast<int32_t>(n_gen);
  options.sampler.temperature = 0.0f;
  options.spec = spec;
  GUFO_ASSIGN_OR_RETURN(engine::GenerateResult result,
                        engine::generate(session, tok, prompt, options, [](std::string_view) {}));
  const double seconds = result.timings.generation_seconds;
  return GenerateRun{.tokens_per_s = seconds > 0 ? static_cast<double>(result.tokens.size()) / seconds : 0.0,
                     .drafted = result.drafted,
                     .accepted = result.accepted};
}

// The tg test at `depth` with --spec: plain, then with drafts, through the generation loop.
Result<std::vector<TestResult>> spec_tests(const BenchOptions& o, const engine::Model& model, ChosenBackend& chosen,
                                           const tokenizer::Tokenizer& tok, engine::ModelDrafter* drafter,
                                           int64_t depth) {
  std::vector<TestResult> results;
  for (const bool drafting : {false, true}) {
    TestResult r;
    r.n_gen = o.n_gen;
    r.depth = depth;
    engine::SpecOptions spec = o.spec.spec;
    if (!drafting) spec.mode = engine::SpecMode::None;
    spec.drafter = drafter;
    r.name = "tg" + std::to_string(o.n_gen) + " " + std::string(engine::spec_mode_name(spec.mode)) +
             (depth > 0 ? " @ d" + std::to_string(depth) : "");
    std::mt19937 rng(1234);
    for (int32_t rep = -1; rep < o.reps; ++rep) {  // rep -1: warm-up, not counted
      GUFO_ASSIGN_OR_RETURN(GenerateRun run,
                            generate_once(model, *chosen.backend, tok, chosen.cache_type, depth, o.n_gen, spec, rng));
      if (rep < 0) continue;
      r.tokens_per_s.push_back(run.tokens_per_s);
      r.drafted += run.drafted;
      r.accepted += run.accepted;
    }
    results.push_back(r);
  }
  return results;
}

int run_bench(const BenchOptions& options) {
  auto model_path = model_or_default(options.model_path);
  if (!model_path.ok()) return report_error(model_path.error());
  BenchOptions o = options;
  o.model_path = *model_path;
  if (o.output != "md" && o.output != "json") return report_error(Error{"-o " + o.output + ": expected md or json"});
  auto prompts = parse_list(o.prompts, "-p", 0);
  if (!prompts.ok()) return report_error(prompts.error());
  auto depths = parse_list(o.depths, "-d", 0);
  if (!depths.ok()) return report_error(depths.error());
  auto chosen = make_backend(o.backend, "bench");
  if (!chosen.ok()) return report_error(chosen.error());
  const bool speculative = o.spec.spec.mode != engine::SpecMode::None && o.n_gen > 0;
  // With --spec the tokenizer comes too (checked against the model): the tg test generates.
  Result<GenerationModel> loaded = Error{""};
  if (speculative) {
    loaded = load_generation_model(o.model_path, *chosen);
  } else if (auto plain = load_model(*chosen, o.model_path); plain.ok()) {
    loaded = GenerationModel{.model = std::move(plain).value(), .tokenizer = nullptr};
  } else {
    loaded = plain.error();
  }
  backend::Backend& backend = *chosen->backend;  // after loading: auto may have fallen back
  const backend::Capabilities caps = backend.capabilities();
  if (!loaded.ok()) return report_error(loaded.error());
  const std::unique_ptr<engine::Model>& model = loaded->model;
  const model::HParams& hp = model->hparams();
  std::unique_ptr<LoadedDraft> draft;
  if (speculative) {
    int64_t deepest = 0;
    for (int64_t depth : *depths) deepest = std::max(deepest, depth);
    auto made = load_draft(o.spec, *chosen, *loaded->tokenizer, deepest + o.n_gen + 256);
    if (!made.ok()) return report_error(made.error());
    draft = std::move(made).value();
  }

  uint64_t n_params = 0, n_bytes = 0;
  for (const gguf::TensorInfo& t : model->file().tensors()) {
    n_params += t.n_elements;
    n_bytes += t.n_bytes;
  }
  std::vector<TestResult> results;
  for (int64_t depth : *depths) {
    std::vector<std::pair<int64_t, int64_t>> tests;
    for (int64_t p : *prompts) {
      if (p > 0) tests.emplace_back(p, 0);
    }
    if (o.n_gen > 0 && !speculative) tests.emplace_back(0, o.n_gen);
    for (auto [n_prompt, n_gen] : tests) {
      TestResult r;
      r.n_prompt = n_prompt;
      r.n_gen = n_gen;
      r.depth = depth;
      r.name = (n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen)) +
               (depth > 0 ? " @ d" + std::to_string(depth) : "");
      if (depth + std::max(n_prompt, n_gen) > hp.n_ctx_train) {
        return report_error(Error{r.name + ": needs " + std::to_string(depth + std::max(n_prompt, n_gen)) +
                                  " positions, the model allows " + std::to_string(hp.n_ctx_train)});
      }
      std::mt19937 rng(1234);
      for (int32_t rep = -1; rep < o.reps; ++rep) {  // rep -1: warm-up, not counted
        auto tps = run_once(*model, backend, chosen->cache_type, depth, n_prompt, n_gen, rng);
        if (!tps.ok()) return report_error(tps.error());
        if (rep >= 0) r.tokens_per_s.push_back(*tps);
      }
      results.push_back(r);
    }
    if (speculative) {
      auto both = spec_tests(o, *model, *chosen, *loaded->tokenizer, draft ? draft->drafter.get() : nullptr, depth);
      if (!both.ok()) return report_error(both.error());
      results.insert(results.end(), both->begin(), both->end());
    }
  }

  const std::string type = [&] {
    // The most common weight type among 2-D tensors names the file, as llama-bench does with ftype.
    std::map<std::string, uint64_t> bytes;
    for (const gguf::TensorInfo& t : model->file().tensors()) {
      if (t.n_dims >= 2) bytes[std::string(dtype_name(t.type))] += t.n_bytes;
    }
    std::string best;
    uint64_t most = 0;
    for (const auto& [name, b] : bytes) {
      if (b > most) most = b, best = name;
    }
    return best;
  }();
  if (o.output == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const TestResult& r : results) {
      out.push_back({{"model", o.model_path},
                     {"arch", hp.arch_name},
                     {"type", type},
                     {"size_bytes", n_bytes},
                     {"n_params", n_params},
                     {"backend", caps.backend},
                     {"threads", caps.threads},
                     {"device", caps.device},
                     {"test", r.name},
                     {"n_prompt", r.n_prompt},
                     {"n_gen", r.n_gen},
                     {"depth", r.depth},
                     {"tokens_per_s", r.tokens_per_s},
                     {"mean", r.mean()},
                     {"stdev", r.stdev()},
                     {"drafted", r.drafted},
                     {"accepted", r.accepted}});
    }
    std::cout << out.dump(2) << '\n';
    return 0;
  }
  std::printf("| model | size | params | backend | threads | device | test | t/s |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | --- | --- | ---: |\n");
  for (const TestResult& r : results) {
    std::printf("| %s %s | %.2f MiB | %.2f M | %s | %d | %s | %s | %.2f ± %.2f |\n", hp.arch_name.c_str(), type.c_str(),
                static_cast<double>(n_bytes) / (1 << 20), static_cast<double>(n_params) / 1e6, caps.backend.c_str(),
                caps.threads, caps.device.c_str(), test_label(r).c_str(), r.mean(), r.stdev());
  }
  return 0;
}

}  // namespace

Command register_bench(CLI::App& root) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* app = root.add_subcommand("bench", "Prefill and decode throughput (llama-bench style)");
  app->add_option("-m,--model", o->model_path,
                  "a GGUF model "
                  "(default: the shipped gufo-tiny; $GUFO_MODEL, $GUFO_MODELS_DIR)");
  app->add_option("-p,--n-prompt", o->prompts, "prompt lengths, comma-separated (pp tests)");
  app->add_option("-n,--n-gen", o->n_gen, "tokens to generate (tg test; 0: none)")->check(CLI::Range(0, 1 << 20));
  app->add_option("-d,--depth", o->depths, "context depths, comma-separated");
  app->add_option("-r,--repetitions", o->reps, "timed runs per test")->check(CLI::Range(1, 1000));
  app->add_option("-o,--output", o->output, "md or json");
  add_spec_flags(*app, o->spec);
  add_backend_flags(*app, o->backend);
  return Command{app, [o] { return run_bench(*o); }};
}

}  // namespace gufo::cli
