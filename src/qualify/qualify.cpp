#include "qualify/qualify.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>

#include "qualify/context.h"
#include "qualify/stages.h"

namespace gufo::qualify {

namespace {

namespace fs = std::filesystem;

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Marks --out as a qualification's own directory (check_options).
constexpr const char* kMarker = ".gufo-qualify";

Result<bool> check_options(const Options& o) {
  if (o.device != "cpu" && o.device != "cuda") return Error{"--device: '" + o.device + "' is not cpu or cuda"};
  if (!(o.perf_tolerance > 0 && o.perf_tolerance < 1)) return Error{"--perf-tolerance: must lie between 0 and 1"};
  if (!(o.latency_tolerance >= 0 && o.latency_tolerance < 10)) {
    return Error{"--latency-tolerance: must lie between 0 and 10"};
  }
  if (!(o.latency_floor_ms >= 0 && o.latency_floor_ms < 60000)) {
    return Error{"--latency-floor-ms: must lie between 0 and 60000"};
  }
  std::error_code ec;
  for (const std::string& profile : o.functional_profiles) {
    if (!fs::exists(o.source / "tests" / "functional" / (profile + ".test.mjs"), ec)) {
      return Error{"--functional-profiles: no profile '" + profile + "' (tests/functional/" + profile + ".test.mjs)"};
    }
  }
  for (int stage : o.stages) {
    if (stage < 1 || stage > 6) return Error{"--stages: " + std::to_string(stage) + " is not a stage (1 to 6)"};
  }
  if (o.quick && o.soak_minutes > 0) return Error{"--soak-minutes: the quick profile has no soak (stage 4)"};
  if (o.soak_minutes < 0) return Error{"--soak-minutes: must not be negative"};
  if (!fs::exists(o.source / "models" / "limits.json", ec)) {
    return Error{"--source " + o.source.string() +
                 ": no models/limits.json (run from Gufo's source tree or pass --source)"};
  }
  // NOTE(qualify): --out is rewritten; a directory that is not empty must carry the marker an
  // earlier qualification left there, so that a mistyped path never costs the user their files.
  if (fs::is_directory(o.out, ec)) {
    if (!fs::is_empty(o.out, ec) && !fs::exists(o.out / kMarker, ec)) {
      return Error{"--out " + o.out.string() + ": not empty and not an earlier qualification's directory (no " +
                   kMarker + "); choose an empty or new directory"};
    }
  } else if (fs::exists(o.out, ec)) {
    return Error{"--out " + o.out.string() + ": not a directory"};
  }
  return true;
}

struct StageSpec {
  int number;
  const char* name;
  std::function<StageResult(Context&)> run;  // empty: not implemented (says why)
  const char* missing;
};

}  // namespace

Result<Report> qualify(const Options& options) {
  if (auto ok = check_options(options); !ok) return ok.error();
  Context context;
  context.options = options;
  context.out = options.out;
  context.logs = options.out / "logs";
  context.work = options.out / "work";
  std::error_code ec;
  fs::create_directories(context.logs, ec);
  if (!ec) fs::create_directories(context.work, ec);
  if (!ec) std::ofstream(options.out / kMarker) << "a directory of gufo qualify's reports and logs\n";
  if (ec) return Error{"--out " + options.out.string() + ": cannot create (" + ec.message() + ")"};
  // An earlier report must not stand beside this run's logs, as if it were this run's verdict.
  for (const char* stale : {"report.json", "report.md"}) fs::remove(options.out / stale, ec);

  auto baseline = open_build("baseline", options.baseline, context.logs);
  if (!baseline) return baseline.error();
  auto candidate = open_build("candidate", options.candidate, context.logs);
  if (!candidate) return candidate.error();
  if (auto ok = check_comparable(*baseline, *candidate, options.device); !ok) return ok.error();
  context.baseline = *baseline;
  context.candidate = *candidate;

  Report report;
  report.profile = options.quick ? "quick" : "full";
  report.device = options.device;
  report.revision = context.baseline.revision;
  report.started = utc_now();
  report.baseline = {{"dir", options.baseline.string()}, {"diagnose", context.baseline.diagnose}};
  report.candidate = {{"dir", options.candidate.string()}, {"diagnose", context.candidate.diagnose}};
  const auto start = std::chrono::steady_clock::now();

  const StageSpec stages[] = {
      {1, "operators", run_operators_stage, ""},     {2, "numerics", run_numerics_stage, ""},
      {3, "serving", run_serving_stage, ""},         {4, "memory pressure and soak", run_pressure_stage, ""},
      {5, "performance", run_performance_stage, ""}, {6, "distribution", run_distribution_stage, ""},
  };
  std::string blocker;  // the first failed stage gates the rest
  for (const StageSpec& spec : stages) {
    const bool in_profile = !options.quick || spec.number != 4;
    const bool selected = options.stages.empty() ||
                          std::find(options.stages.begin(), options.stages.end(), spec.number) != options.stages.end();
    if (!in_profile) {
      report.stages.push_back(skipped_stage(spec.number, spec.name, "not in the quick profile"));
    } else if (!selected) {
      report.stages.push_back(skipped_stage(spec.number, spec.name, "not selected (--stages)"));
    } else if (!blocker.empty()) {
      report.stages.push_back(skipped_stage(spec.number, spec.name, "did not run: " + blocker));
    } else if (!spec.run) {
      report.stages.push_back(skipped_stage(spec.number, spec.name, spec.missing));
    } else {
      const auto stage_start = std::chrono::steady_clock::now();
      report.stages.push_back(spec.run(context));
      report.stages.back().seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - stage_start).count();
      if (interrupted()) return Error{"qualify: interrupted during stage " + std::to_string(spec.number)};
    }
    const StageResult& done = report.stages.back();
    if (blocker.empty() && done.verdict == Verdict::Fail) {
      blocker = "stage " + std::to_string(done.number) + " (" + done.name + ") failed";
    }
    if (in_profile && done.verdict != Verdict::Pass && report.reason.empty()) {
      report.reason = "stage " + std::to_string(done.number) + " (" + done.name +
                      "): " + std::string(to_string(done.verdict)) + ": " + done.reason;
    }
  }
  report.verdict = report.reason.empty() ? Verdict::Pass : Verdict::Fail;
  if (report.reason.empty()) {
    report.reason = options.quick ? "stages 1, 2, 3, 5 and 6 passed (the quick profile)" : "every stage passed";
    // What a pass does not cover is said with it.
    std::string not_run;
    for (const StageResult& s : report.stages) {
      for (const Check& check : s.checks) {
        if (check.verdict == Verdict::Skip) not_run += (not_run.empty() ? "" : "; ") + check.name;
      }
    }
    if (!not_run.empty()) report.reason += "; checks that did not run: " + not_run;
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace gufo::qualify
