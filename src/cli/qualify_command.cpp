// `gufo qualify --baseline B --candidate C [--quick] [--out DIR] [--record]`: two builds of one
// revision compared stage by stage (src/qualify/qualify.h); writes DIR/report.md and
// DIR/report.json and prints the stages' verdicts; --record keeps a passing report in the
// source tree (qualify/record.h). Exit 0 only for an overall pass, 1 otherwise.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "qualify/process.h"
#include "qualify/qualify.h"
#include "qualify/record.h"
#include "qualify/report.h"

namespace gufo::cli {

Command register_qualify(CLI::App& root) {
  CLI::App* app =
      root.add_subcommand("qualify", "Two builds of one revision compared stage by stage: one gated report");
  auto o = std::make_shared<qualify::Options>();
  app->add_option("--baseline", o->baseline, "the baseline build directory (e.g. build/default)")->required();
  app->add_option("--candidate", o->candidate, "the candidate build directory (e.g. build/clang)")->required();
  app->add_flag("--quick", o->quick, "the quick profile: every stage but 4 (soak), short benchmarks (CI)");
  app->add_option("--out", o->out, "where report.md, report.json, plots and logs go");
  app->add_option("--source", o->source, "Gufo's source tree (models/, tests/functional/)");
  app->add_option("--device", o->device, "where the models run: cpu or cuda");
  app->add_option("--perf-tolerance", o->perf_tolerance,
                  "a benchmark fails when confidently slower than this fraction");
  app->add_option("--latency-tolerance", o->latency_tolerance,
                  "stage 3: a request may be this fraction slower on the candidate (or --latency-floor-ms)");
  app->add_option("--latency-floor-ms", o->latency_floor_ms, "stage 3: ... or this many milliseconds, if larger");
  app->add_option("--perf-rounds", o->perf_rounds, "alternated benchmark rounds (0: 5 quick, 8 full)");
  app->add_option("--bench-model", o->bench_model, "the model stage 5 measures (default: the shipped gufo-tiny)");
  app->add_option("--functional-profiles", o->functional_profiles,
                  "the functional profiles stage 3 runs (default: the profile's)")
      ->delimiter(',');
  app->add_option("--stages", o->stages,
                  "run only these stages (e.g. 1,2): no overall pass without every stage of the profile")
      ->delimiter(',');
  app->add_option("-t,--threads", o->threads, "CPU threads for every gufo run (0: all)");
  app->add_option("--soak-minutes", o->soak_minutes, "stage 4: how long the soak of agent conversations runs")
      ->default_str("10")
      ->check(CLI::Range(0.2, 10000.0));
  app->add_flag("--record", o->record,
                "after a pass, keep the report in SOURCE/qualification/ and rewrite README's qualified-toolchain line");
  return {app, [o]() {
            qualify::interrupt_on_signals();  // Ctrl-C stops the servers and suites it started
            auto report = qualify::qualify(*o);
            if (!report) return report_error(report.error());
            if (auto written = qualify::write_report(*report, o->out); !written) return report_error(written.error());
            for (const qualify::StageResult& stage : report->stages) {
              std::printf("stage %d %-26s %-4s %s\n", stage.number, stage.name.c_str(),
                          std::string(qualify::to_string(stage.verdict)).c_str(), stage.reason.c_str());
            }
            std::printf("qualify: %s: %s (%s)\n", std::string(qualify::to_string(report->verdict)).c_str(),
                        report->reason.c_str(), (o->out / "report.md").c_str());
            if (report->verdict != qualify::Verdict::Pass) return 1;
            if (o->record) {
              auto kept = qualify::record_report(qualify::report_json(*report), o->out, o->source);
              if (!kept) return report_error(kept.error());
              std::printf("qualify: recorded in %s; README.md's qualified-toolchain line names it\n",
                          (o->source / *kept).c_str());
            }
            return 0;
          }};
}

}  // namespace gufo::cli
