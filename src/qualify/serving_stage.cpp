// Stage 3: serving. First the replay (tests/functional/replay.mjs): one fixed set of
// deterministic requests sent to both builds' servers in turn, A B then B A each round. Each
// build must give the same answer every round; where the numerics stage found the two builds'
// logits bit-identical, both builds must give the same answers; and each request's latency on
// the candidate must stay within 5% or 3 ms (whichever is larger) of the baseline's, measured
// as the median of the rounds' paired differences (the first round, which fills the caches,
// is not timed), with a tenth of the requests allowed as noise's outliers, each named in the
// report. Then the functional suite (tests/functional: OpenAI's own client against a real
// `gufo serve`) against each build: the quick profile runs the profiles that cover sampling,
// errors, tool calls and structured output, the full profile all of them.
#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>

#include "qualify/functional_suite.h"
#include "qualify/json_access.h"
#include "qualify/stages.h"
#include "qualify/stats.h"

namespace gufo::qualify {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> profiles(const Options& options) {
  if (!options.functional_profiles.empty()) return options.functional_profiles;
  if (options.quick) return {"sampling", "errors", "tools", "structured"};
  return {"sampling",  "cache",     "concurrency", "long_context", "errors",     "tools",      "reasoning", "lifecycle",
          "anthropic", "responses", "models",      "chat_page",    "embeddings", "structured", "agent"};
}

struct RequestTiming {
  std::string name;
  bool timed = false;      // at least one timed round on each side, aligned
  bool same = false;       // the builds' answers equal: the same work, so times compare
  double baseline_ms = 0;  // median of the timed rounds
  double candidate_ms = 0;
  double paired_ms = 0;   // median of candidate - baseline, round by round
  double allowed_ms = 0;  // max(5% of the baseline's median, 3 ms) by default
  bool over() const { return paired_ms > allowed_ms; }
  // NOTE(qualify): an outlier is noise only when it is near the bound; a request several
  // times over it is a slowdown of that request, whatever the others do.
  bool far_over() const { return paired_ms > 2 * allowed_ms; }
};

// Rounds 1.. of both sides, paired (round 0 fills the caches and is not timed); a request
// whose samples are missing or not numbers is not `timed`.
RequestTiming time_request(const std::string& name, bool same, const nlohmann::json& latency, const Options& options) {
  RequestTiming t;
  t.name = name;
  t.same = same;
  const nlohmann::json& base = member(latency, "baseline");
  const nlohmann::json& cand = member(latency, "candidate");
  if (!base.is_array() || !cand.is_array() || base.size() != cand.size() || base.size() < 2) return t;
  std::vector<double> b, c, paired;
  for (size_t i = 1; i < base.size(); ++i) {
    const std::optional<double> x = finite(base[i]);
    const std::optional<double> y = finite(cand[i]);
    if (!x || !y) return t;
    b.push_back(*x);
    c.push_back(*y);
    paired.push_back(*y - *x);
  }
  t.timed = true;
  t.baseline_ms = median(b);
  t.candidate_ms = median(c);
  t.paired_ms = median(paired);
  t.allowed_ms = std::max(options.latency_tolerance * t.baseline_ms, options.latency_floor_ms);
  return t;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Check latency_check(const std::vector<RequestTiming>& timings, const Options& options, StageResult& stage) {
  std::vector<std::string> over, untimed;
  bool far = false;
  size_t compared = 0;
  std::ostringstream table;
  table << "| request | baseline ms | candidate ms | paired difference ms | allowed ms | verdict |\n"
        << "|---|---:|---:|---:|---:|---|\n";
  for (const RequestTiming& t : timings) {
    // Different answers are different work (other lengths): their times do not compare.
    const char* verdict = !t.timed   ? "no samples"
                          : !t.same  ? "not compared: answers differ"
                          : t.over() ? "over"
                                     : "within";
    char row[320];
    std::snprintf(row, sizeof row, "| %s | %.2f | %.2f | %+.2f | %.2f | %s |\n", t.name.c_str(), t.baseline_ms,
                  t.candidate_ms, t.paired_ms, t.allowed_ms, verdict);
    table << row;
    if (!t.timed) untimed.push_back(t.name);
    if (t.timed && t.same) {
      ++compared;
      if (t.over()) over.push_back(t.name);
      far = far || t.far_over();
    }
    stage.data["requests"][t.name]["latency"] = {{"baseline_ms", t.baseline_ms},
                                                 {"candidate_ms", t.candidate_ms},
                                                 {"paired_ms", t.paired_ms},
                                                 {"allowed_ms", t.allowed_ms},
                                                 {"verdict", verdict}};
  }
  // NOTE(qualify): noise on a shared machine moves a request now and then; a tenth of the
  // compared requests may lie over the bound (not twice over it), and the report names them.
  const size_t outliers_allowed = compared / 10;
  stage.markdown += "Replayed requests, medians of the timed rounds:\n\n" + table.str() + "\n";
  char bound[96];
  std::snprintf(bound, sizeof bound, "per-request latency within %g%% or %g ms", 100 * options.latency_tolerance,
                options.latency_floor_ms);
  Check check{bound, Verdict::Pass, ""};
  check.detail = std::to_string(compared - over.size()) + " of " + std::to_string(compared) +
                 " compared requests within their bound";
  if (!over.empty()) {
    check.detail += "; over: " + join(over) + " (" + std::to_string(outliers_allowed) + " allowed as noise" +
                    (far ? "; twice over the bound is not noise" : "") + ")";
  }
  if (over.size() > outliers_allowed || far) check.verdict = Verdict::Fail;
  if (!untimed.empty()) check = {check.name, Verdict::Fail, "no aligned latency samples for " + join(untimed)};
  if (compared == 0 && untimed.empty()) {
    check = {check.name, Verdict::Skip, "no request gave the same answer on both builds, so none compares"};
  }
  if (timings.empty()) check = {check.name, Verdict::Fail, "the replay timed no request"};
  return check;
}

void replay_checks(Context& context, StageResult& stage) {
  const fs::path out = context.work / "replay.json";
  const int rounds = context.options.quick ? 8 : 20;
  std::vector<std::string> argv = {"node",        context.source("tests/functional/replay.mjs").string(),
                                   "--baseline",  fs::absolute(context.baseline.gufo).string(),
                                   "--candidate", fs::absolute(context.candidate.gufo).string(),
                                   "--model",     fs::absolute(context.source("models/gufo-tiny-q8_0.gguf")).string(),
                                   "--rounds",    std::to_string(rounds),
                                   "--out",       out.string()};
  auto run = context.run("replay", argv, 1200);
  auto printed = run && run->succeeded() ? read_text(out.string()) : Result<std::string>(Error{""});
  const nlohmann::json replay = printed ? nlohmann::json::parse(*printed, nullptr, false) : nlohmann::json();
  if (!member(replay, "requests").is_array() || member(replay, "requests").empty()) {
    const std::string why = !run                ? run.error().message
                            : !run->succeeded() ? run->why()
                                                : "work/replay.json is missing, malformed or lists no request";
    stage.checks.push_back({"replay", Verdict::Fail, why});
    return;
  }
  std::vector<std::string> unstable, differ;
  std::vector<RequestTiming> timings;
  for (const nlohmann::json& r : replay["requests"]) {
    if (!r.is_object()) continue;
    const std::string name = string_of(member(r, "name"), "?");
    const nlohmann::json& stable = member(r, "stable");
    if (member(stable, "baseline") != true || member(stable, "candidate") != true) unstable.push_back(name);
    const bool same = member(r, "same") == true;
    if (!same) differ.push_back(name);
    stage.data["requests"][name]["same"] = same;
    timings.push_back(time_request(name, same, member(r, "latency_ms"), context.options));
  }
  stage.data["replay_rounds"] = rounds;
  const std::string count = std::to_string(timings.size()) + " requests, " + std::to_string(rounds) + " rounds";
  stage.checks.push_back({"each build answers the same every round", unstable.empty() ? Verdict::Pass : Verdict::Fail,
                          unstable.empty() ? count : "answers changed between rounds: " + join(unstable)});
  Check same{"the same answers on both builds", Verdict::Pass, ""};
  if (!context.logits_identical) {
    same.verdict = Verdict::Skip;
    same.detail = "the numerics stage did not find the logits bit-identical, so answers may differ (" +
                  std::to_string(differ.size()) + " of " + std::to_string(timings.size()) + " did" +
                  (differ.empty() ? "" : ": " + join(differ)) + ")";
  } else {
    same.verdict = differ.empty() ? Verdict::Pass : Verdict::Fail;
    same.detail = differ.empty() ? "all " + std::to_string(timings.size()) + " answers equal (logits bit-identical)"
                                 : "the logits are bit-identical, yet these answers differ: " + join(differ);
  }
  stage.checks.push_back(same);
  stage.checks.push_back(latency_check(timings, context.options, stage));
}

}  // namespace

StageResult run_serving_stage(Context& context) {
  StageResult stage;
  stage.number = 3;
  stage.name = "serving";
  std::error_code ec;
  if (!fs::exists(context.source("tests/functional/node_modules/openai"), ec)) {
    stage.checks.push_back({"prerequisites", Verdict::Fail,
                            "tests/functional: npm packages missing (run: cd tests/functional && npm ci)"});
    stage.conclude();
    return stage;
  }
  replay_checks(context, stage);
  const std::vector<std::string> names = profiles(context.options);
  stage.data["profiles"] = names;
  for (const bool candidate : {false, true}) {
    stage.checks.push_back(suite_check(context, stage, context.build(candidate), names));
  }
  stage.markdown += "Functional profiles: " + join(names) + ".\n\n";
  stage.conclude();
  return stage;
}

}  // namespace gufo::qualify
