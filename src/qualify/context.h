// What every stage shares: the options, the two builds, where logs go, and how a stage runs
// one of a build's programs (logged under logs/, killed past its time limit).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "qualify/build.h"
#include "qualify/process.h"
#include "qualify/qualify.h"

namespace gufo::qualify {

struct Context {
  Options options;
  Build baseline;
  Build candidate;
  std::filesystem::path out;   // the report's directory
  std::filesystem::path logs;  // out/logs: one file per program run
  std::filesystem::path work;  // out/work: logits, bench JSON, plot data
  // Set by the numerics stage: every shipped model's logits are bit-identical between the
  // builds, so serving must give the same answers token for token.
  bool logits_identical = false;

  struct Run {
    ProcessOutcome outcome;
    std::filesystem::path out;  // standard output: logs/NAME.out
    std::filesystem::path err;  // standard error: logs/NAME.err
    double timeout_s = 0;
    bool succeeded() const { return outcome.succeeded(); }
    std::string describe() const { return outcome.describe(timeout_s); }
    // "exit 1: <the last line it printed on stderr (else stdout)>", for a check's detail.
    std::string why() const;
  };

  // Runs argv with its output in logs/LOG_NAME.{out,err}; an error only when it could not start.
  Result<Run> run(const std::string& log_name, std::vector<std::string> argv, double timeout_s,
                  std::vector<std::pair<std::string, std::string>> env = {}) const;

  // Flags every gufo run takes: --device and -t.
  std::vector<std::string> device_flags() const;
  std::filesystem::path source(const std::string& relative) const { return options.source / relative; }
  const Build& build(bool candidate_side) const { return candidate_side ? candidate : baseline; }
};

}  // namespace gufo::qualify
