// Stage 5: performance. `gufo bench` of both builds on one model, alternated A B B A ... so
// that a drift of the machine (thermal, other tenants) falls on both, and each test compared
// with a 95% confidence interval (stats.h): "no change", "faster by X%", "slower by X%". A
// test fails only when the candidate is confidently slower than the tolerance: its whole
// interval lies below -tolerance.
#include <map>
#include <sstream>

#include "qualify/json_access.h"
#include "qualify/plot.h"
#include "qualify/stages.h"
#include "qualify/stats.h"

namespace gufo::qualify {

namespace {

namespace fs = std::filesystem;

struct BenchPlan {
  fs::path model;
  std::vector<std::string> flags;  // -p ... -n ... -d ... -r ...
  int rounds = 3;
};

// The tests, pp512, pp2048 and tg128 at depths 0 and 4096, need a model of a real
// context (--bench-model); the shipped model holds 2,048 tokens, so on it the full profile
// measures pp512 and tg128 at depths 0 and 1024, and the quick profile at depth 0 only.
Result<BenchPlan> plan(const Context& context) {
  const Options& o = context.options;
  BenchPlan p;
  p.rounds = o.perf_rounds > 0 ? o.perf_rounds : (o.quick ? 5 : 8);
  p.model = o.bench_model.empty() ? context.source("models/gufo-tiny-q8_0.gguf") : fs::path(o.bench_model);
  if (o.quick) {
    p.flags = {"-p", "512", "-n", "128", "-d", "0", "-r", "3"};
  } else if (o.bench_model.empty()) {
    p.flags = {"-p", "512", "-n", "128", "-d", "0,1024", "-r", "3"};
  } else {
    p.flags = {"-p", "512,2048", "-n", "128", "-d", "0,4096", "-r", "3"};
  }
  std::error_code ec;
  if (!fs::exists(p.model, ec)) return Error{p.model.string() + ": no such model (--bench-model)"};
  return p;
}

// test "pp512 @ d0" -> its tokens/s, one sample a round (the mean of the process's repetitions).
using Samples = std::map<std::string, std::vector<double>>;

Result<bool> bench_once(Context& context, const Build& build, const BenchPlan& p, int round, Samples& samples) {
  std::vector<std::string> argv = {build.gufo.string(), "bench", "-m", p.model.string(), "-o", "json"};
  for (const std::string& f : p.flags) argv.push_back(f);
  for (const std::string& f : context.device_flags()) argv.push_back(f);
  auto run = context.run(build.role + "-bench-" + std::to_string(round), argv, 1200);
  if (!run) return run.error();
  if (!run->succeeded()) return Error{build.label() + ": gufo bench: " + run->why()};
  auto printed = read_text(run->out.string());
  const nlohmann::json rows = printed ? nlohmann::json::parse(*printed, nullptr, false) : nlohmann::json();
  if (!rows.is_array() || rows.empty()) return Error{build.label() + ": gufo bench printed no results"};
  for (const nlohmann::json& row : rows) {
    // One sample a process: the mean of its repetitions (they share a process's state, so
    // they are not independent samples of the build's speed).
    const std::optional<double> mean = finite(member(row, "mean"));
    const std::string test = string_of(member(row, "test"));
    if (!mean || test.empty()) return Error{build.label() + ": gufo bench printed a row without its numbers"};
    // bench names a test at a depth "pp512 @ d4096" itself, at depth 0 "pp512".
    const std::string key = test.find(" @ d") != std::string::npos ? test : test + " @ d0";
    samples[key].push_back(*mean);
  }
  return true;
}

}  // namespace

StageResult run_performance_stage(Context& context) {
  StageResult stage;
  stage.number = 5;
  stage.name = "performance";
  auto p = plan(context);
  if (!p) {
    stage.checks.push_back({"benchmark", Verdict::Fail, p.error().message});
    stage.conclude();
    return stage;
  }
  Samples samples[2];
  for (int round = 0; round < p->rounds; ++round) {
    // A B, then B A: each build runs first in half of the rounds.
    for (const bool candidate : round % 2 == 0 ? std::vector<bool>{false, true} : std::vector<bool>{true, false}) {
      auto ok = bench_once(context, context.build(candidate), *p, round, samples[candidate]);
      if (!ok) {
        stage.checks.push_back({"benchmark", Verdict::Fail, ok.error().message});
        stage.conclude();
        return stage;
      }
    }
  }
  const double tol = context.options.perf_tolerance;
  std::ostringstream table, plot;
  table << "| test | baseline tokens/s | candidate tokens/s | change |\n|---|---:|---:|---|\n";
  plot << "test baseline error candidate error\n";
  for (const auto& [test, base] : samples[0]) {
    auto c = compare_throughput(base, samples[1][test]);
    if (!c) {
      stage.checks.push_back({test, Verdict::Fail, c.error().message});
      continue;
    }
    // Slower beyond the tolerance, with an interval that excludes "no change": a failure.
    // Beyond the tolerance but inside the noise: not judged, and said so (a Skip check is
    // named in the overall reason), rather than passed.
    const bool beyond = c->relative < -tol;
    Verdict verdict = Verdict::Pass;
    std::string detail = c->describe();
    if (beyond && c->change == Change::Slower) {
      verdict = Verdict::Fail;
    } else if (beyond) {
      verdict = Verdict::Skip;
      detail = "inconclusive, too noisy to judge: " + detail;
    } else if (c->change == Change::Slower) {
      detail += ", within the " + std::to_string(static_cast<int>(100 * tol)) + "% tolerance";
    }
    stage.checks.push_back({test + ": " + p->model.filename().string(), verdict, detail});
    stage.data["tests"][test] = {{"baseline_mean", c->baseline.mean},
                                 {"baseline_stdev", c->baseline.stdev},
                                 {"candidate_mean", c->candidate.mean},
                                 {"candidate_stdev", c->candidate.stdev},
                                 {"samples", c->baseline.n},
                                 {"relative", c->relative},
                                 {"relative_low", c->relative_low},
                                 {"relative_high", c->relative_high}};
    table.precision(1);
    table << std::fixed << "| " << test << " | " << c->baseline.mean << " ± " << c->baseline.stdev << " | "
          << c->candidate.mean << " ± " << c->candidate.stdev << " | " << detail << " |\n";
    std::string label = test;
    for (char& ch : label) ch = ch == ' ' ? '_' : ch;
    plot << label << ' ' << c->baseline.mean << ' ' << c->baseline.stdev << ' ' << c->candidate.mean << ' '
         << c->candidate.stdev << '\n';
  }
  stage.data["model"] = p->model.string();
  stage.data["rounds"] = p->rounds;
  stage.data["tolerance"] = tol;
  stage.markdown += "Model " + p->model.filename().string() + ", " + std::to_string(p->rounds) +
                    " rounds alternated, `gufo bench` with " +
                    [&] {
                      std::string f;
                      for (const std::string& s : p->flags) f += (f.empty() ? "" : " ") + s;
                      return f;
                    }() +
                    " (mean ± standard deviation of the rounds, each the mean of its repetitions):\n\n" + table.str() +
                    "\n";
  Plot chart{"performance.png", "gufo bench, tokens/s (mean and standard deviation of the rounds)", "tokens/s", false,
             true};
  if (auto file = draw_bars(context.out, context.work, chart, plot.str())) stage.plots.push_back(*file);
  stage.checks.push_back(
      {"cuBLASLt plan database re-tuned", Verdict::Skip, "this revision has no cuBLASLt plan database to re-tune"});
  stage.conclude();
  return stage;
}

}  // namespace gufo::qualify
