// `gufo qualify`: two builds of one source revision (a baseline toolchain and a candidate),
// compared stage by stage, each stage gating the next, into one report (report.md and
// report.json in --out). The stages, in order (ARCHITECTURE.md, "qualification kit"):
//   1 operators    GPU kernels' resources diffed; the operator oracle suite on the candidate
//   2 numerics     KL / NLL of both builds against the reference logits and of the candidate
//                  against the baseline, within models/limits.json; --validate-prefill
//   3 serving      the same requests replayed against both builds' servers (the same answers
//                  where the logits are bit-identical; latency within 5% or 3 ms), and the
//                  functional suite against each
//   4 soak         the KV pool past its limit, injected faults (a failed allocation, a lost
//                  device), memory limits, and a soak of agent conversations with drift
//                  bounds (not in the quick profile)
//   5 performance  `gufo bench` alternated between the builds, noise-aware verdicts
//   6 distribution cmake --install and a Debian package of the candidate, with the notices of
//                  what it links
// The overall verdict is pass only when every stage the profile requires passed; a stage that
// did not run says why and never counts as passed (so --stages that leaves out a stage of the
// profile never gives an overall pass), and a pass names the checks that did not run.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "qualify/stage.h"

namespace gufo::qualify {

struct Options {
  std::filesystem::path baseline;   // a build directory (bin/gufo, tests/...)
  std::filesystem::path candidate;  // the same, from the candidate toolchain
  std::filesystem::path out = "qualification-out";
  std::filesystem::path source = ".";            // the source tree: models/, tests/functional/
  std::string device = "cpu";                    // cpu or cuda: where the builds' models run
  bool quick = false;                            // the quick profile (CI): every stage but 4
  double perf_tolerance = 0.05;                  // stage 5 fails a test confidently slower than this
  double latency_tolerance = 0.05;               // stage 3: a request's latency may grow by this fraction
  double latency_floor_ms = 3;                   // ... or by this many milliseconds, whichever is larger
  int perf_rounds = 0;                           // 0: 5 quick, 8 full
  std::string bench_model;                       // empty: the profile's (qualify.cpp)
  int threads = 0;                               // -t for every gufo run (0: all cores)
  std::vector<int> stages;                       // empty: every stage of the profile; else only these
  std::vector<std::string> functional_profiles;  // empty: the profile's (serving_stage.cpp)
  double soak_minutes = 0;                       // stage 4's soak of agent conversations (0: 10)
  bool record = false;  // a pass is kept in source/qualification/ with README's line (record.h)
};

struct Report {
  Verdict verdict = Verdict::Fail;
  std::string reason;
  std::string profile;  // "quick" or "full"
  std::string device;   // cpu or cuda
  std::string revision;
  std::string started;  // UTC, ISO 8601
  double seconds = 0;
  nlohmann::json baseline;   // {"dir", "diagnose"}
  nlohmann::json candidate;  // the same
  std::vector<StageResult> stages;
};

// Runs the stages. An error only for bad input that stops everything before a stage runs:
// a build that is missing or broken, builds of two revisions, a source tree without models.
Result<Report> qualify(const Options& options);

}  // namespace gufo::qualify
