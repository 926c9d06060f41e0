// Stage 4: memory pressure and soak, on the candidate.
//   - the functional profile `pressure` (tests/functional/pressure.test.mjs): a KV pool far
//     smaller than the parallel sequences need (requests wait or get 429, none is lost), a
//     failed allocation mid-batch (GUFO_FAULTS=forward_oom_at: only that step's requests
//     fail) and a lost device (device_lost_at: every request gets a 5xx, /health says so);
//   - a model past the memory the process may have: `gufo run` under address-space limits
//     (prlimit --as) rising in 4 MiB steps until it runs; at every limit below, it must end
//     with one line of gufo's own that says memory ran out, never a signal or a bare
//     exception name;
//   - the soak (tests/functional/soak.mjs): concurrent agent conversations for --soak-minutes
//     (10 by default), sampled in windows; every request answered, and from the first third
//     of the windows to the last, resident memory, median latency and throughput within
//     bounds (kRssGrowth, kLatencyGrowth, kThroughputDrop).
#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <sstream>

#include "qualify/functional_suite.h"
#include "qualify/json_access.h"
#include "qualify/process.h"
#include "qualify/stages.h"
#include "qualify/stats.h"

namespace gufo::qualify {

namespace {

namespace fs = std::filesystem;

constexpr double kRssGrowth = 0.10;          // of the first third's resident memory ...
constexpr double kRssGrowthFloorMb = 32;     // ... or this many MiB, whichever is larger
constexpr double kLatencyGrowth = 0.25;      // median latency, last third against the first
constexpr double kLatencyGrowthFloorMs = 5;  // ... or this many ms, whichever is larger
constexpr double kThroughputDrop = 0.25;     // tokens a window, last third against the first

// What one run under an address-space limit showed.
enum class LimitOutcome { Ran, LoaderFailed, ClearError, Unclear };

LimitOutcome classify(const Context::Run& run, const std::string& err) {
  if (run.succeeded()) return LimitOutcome::Ran;
  // The dynamic loader could not map gufo's own libraries: gufo never started.
  if (run.outcome.exit_code == 127 && err.find("error while loading shared libraries") != std::string::npos) {
    return LimitOutcome::LoaderFailed;
  }
  // Its last line (notices such as GUFO_FAULTS' may come before) is gufo's own error.
  std::string text = err;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const size_t newline = text.find_last_of('\n');
  const std::string last = newline == std::string::npos ? text : text.substr(newline + 1);
  static const std::regex clear(R"(^gufo( [a-z]+)?: (error: )?.*(memory|cannot map|cannot allocate).*$)",
                                std::regex::icase);
  if (run.outcome.exit_code == 1 && std::regex_match(last, clear) && last.find("std::") == std::string::npos) {
    return LimitOutcome::ClearError;
  }
  return LimitOutcome::Unclear;
}

Check memory_limit_check(Context& context, StageResult& stage) {
  Check check{"a model past the memory the process may have", Verdict::Fail, ""};
  const fs::path model = fs::absolute(context.source("models/gufo-tiny-q8_0.gguf"));
  constexpr int64_t kStep = int64_t{4} << 20;
  int clear = 0;
  int64_t ran_at = 0;
  for (int64_t limit = int64_t{16} << 20; limit <= (int64_t{2} << 30) && ran_at == 0; limit += kStep) {
    std::vector<std::string> argv = {"prlimit",
                                     "--as=" + std::to_string(limit),
                                     "--",
                                     context.candidate.gufo.string(),
                                     "run",
                                     "--device",
                                     "cpu",
                                     "-m",
                                     model.string(),
                                     "-p",
                                     "The GNU project",
                                     "-n",
                                     "4",
                                     "-t",
                                     "1"};
    auto run = context.run("memory-limit-" + std::to_string(limit >> 20) + "m", argv, 120);
    if (!run) {
      check.detail = run.error().message;
      return check;
    }
    auto err = read_text(run->err.string());
    switch (classify(*run, err ? *err : "")) {
      case LimitOutcome::Ran:
        ran_at = limit;
        break;
      case LimitOutcome::LoaderFailed:
        break;
      case LimitOutcome::ClearError:
        ++clear;
        break;
      case LimitOutcome::Unclear:
        check.detail = "under a " + std::to_string(limit >> 20) + " MiB limit: " + run->why() +
                       " (not one line of gufo's naming memory; logs/memory-limit-" + std::to_string(limit >> 20) +
                       "m.err)";
        return check;
    }
  }
  stage.data["memory_limit"] = {{"clear_errors", clear}, {"ran_at_mib", ran_at >> 20}};
  if (ran_at == 0 || clear == 0) {
    check.detail = ran_at == 0 ? "gufo run never ran under any limit up to 2 GiB"
                               : "no limit made gufo itself run out of memory: nothing was tested";
    return check;
  }
  check.verdict = Verdict::Pass;
  check.detail = std::to_string(clear) + " limits below " + std::to_string(ran_at >> 20) +
                 " MiB each ended in one clear line; it ran from there";
  return check;
}

// The medians of `field` over the first and last thirds of the windows (the first window,
// start-up, left out; so are windows that finished no request when `busy_only`, whose
// latencies are no measurement). Nothing when a window lacks the number or too few remain.
std::optional<std::pair<double, double>> thirds(const nlohmann::json& windows, const char* field, bool busy_only) {
  std::vector<double> values;
  for (size_t i = 1; i < windows.size(); ++i) {
    if (busy_only && finite(member(windows[i], "requests")).value_or(0) <= 0) continue;
    const std::optional<double> v = finite(member(windows[i], field));
    if (!v) return std::nullopt;
    values.push_back(*v);
  }
  if (values.size() < 3) return std::nullopt;
  const auto third = static_cast<std::ptrdiff_t>(values.size() / 3);
  return std::pair{median({values.begin(), values.begin() + third}), median({values.end() - third, values.end()})};
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.precision(digits);
  s << std::fixed << v;
  return s.str();
}

void soak_checks(Context& context, StageResult& stage) {
  const double minutes = context.options.soak_minutes > 0 ? context.options.soak_minutes : 10;
  const fs::path out = context.work / "soak.json";
  const int window = minutes >= 5 ? 10 : std::max(1, static_cast<int>(minutes * 60 / 12));
  std::vector<std::string> argv = {"node",      context.source("tests/functional/soak.mjs").string(),
                                   "--binary",  fs::absolute(context.candidate.gufo).string(),
                                   "--model",   fs::absolute(context.source("models/gufo-tiny-q8_0.gguf")).string(),
                                   "--seconds", std::to_string(static_cast<int>(std::lround(minutes * 60))),
                                   "--window",  std::to_string(window),
                                   "--out",     out.string()};
  auto run = context.run("soak", argv, minutes * 60 + 300);
  auto text = run && run->succeeded() ? read_text(out.string()) : Result<std::string>(Error{""});
  const nlohmann::json soak = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  const nlohmann::json& windows = member(soak, "windows");
  const nlohmann::json& errors = member(soak, "errors");
  if (!windows.is_array() || !errors.is_array()) {
    const std::string why = !run ? run.error().message : !run->succeeded() ? run->why() : "work/soak.json is malformed";
    stage.checks.push_back({"soak of agent conversations", Verdict::Fail, why});
    return;
  }
  stage.data["soak"] = soak;
  Check answered{"soak: every request answered", Verdict::Pass, ""};
  int64_t requests = 0;
  for (const nlohmann::json& w : windows) requests += static_cast<int64_t>(finite(member(w, "requests")).value_or(0));
  answered.detail = std::to_string(requests) + " requests in " + fixed(minutes, 1) + " min";
  if (!errors.empty()) {
    answered.verdict = Verdict::Fail;
    answered.detail =
        std::to_string(errors.size()) + " failed (the soak stops past 20); first: " + string_of(errors[0], "?");
  }
  stage.checks.push_back(answered);
  if (windows.size() < 4) {
    stage.checks.push_back({"soak: drift", Verdict::Fail,
                            "only " + std::to_string(windows.size()) + " windows: too few to compare thirds"});
    return;
  }
  const auto rss = thirds(windows, "rss_kb", false);
  const auto p50 = thirds(windows, "p50_ms", true);
  const auto tokens = thirds(windows, "completion_tokens", false);
  if (!rss || !p50 || !tokens) {
    stage.checks.push_back(
        {"soak: drift", Verdict::Fail, "a window lacks its memory or latency, or too few finished requests"});
    return;
  }
  const auto [rss0, rss1] = *rss;
  const double rss_allowed = std::max(kRssGrowth * rss0, kRssGrowthFloorMb * 1024);
  stage.checks.push_back({"soak: resident memory drift", rss1 - rss0 <= rss_allowed ? Verdict::Pass : Verdict::Fail,
                          fixed(rss0 / 1024, 1) + " -> " + fixed(rss1 / 1024, 1) + " MiB (allowed +" +
                              fixed(rss_allowed / 1024, 1) + ")"});
  const auto [p50_0, p50_1] = *p50;
  const double latency_allowed = std::max(kLatencyGrowth * p50_0, kLatencyGrowthFloorMs);
  stage.checks.push_back(
      {"soak: median latency drift", p50_1 - p50_0 <= latency_allowed ? Verdict::Pass : Verdict::Fail,
       fixed(p50_0, 1) + " -> " + fixed(p50_1, 1) + " ms (allowed +" + fixed(latency_allowed, 1) + ")"});
  const auto [tok0, tok1] = *tokens;
  stage.checks.push_back({"soak: throughput drift",
                          tok1 >= (1 - kThroughputDrop) * tok0 ? Verdict::Pass : Verdict::Fail,
                          fixed(tok0 / window, 1) + " -> " + fixed(tok1 / window, 1) + " tokens/s (allowed -" +
                              fixed(kThroughputDrop * 100, 0) + "%)"});
}

}  // namespace

StageResult run_pressure_stage(Context& context) {
  StageResult stage;
  stage.number = 4;
  stage.name = "memory pressure and soak";
  Check pressure = suite_check(context, stage, context.candidate, {"pressure"}, "pressure");
  pressure.name = "KV pool past its limit, a failed allocation, a lost device (functional profile pressure)";
  stage.checks.push_back(pressure);
  stage.checks.push_back(memory_limit_check(context, stage));
  soak_checks(context, stage);
  stage.conclude();
  return stage;
}

}  // namespace gufo::qualify
