// What a qualification stage reports: a verdict with the reason for it, the checks it is made
// of, and its measurements for report.json. A stage that did not run says why and is never
// counted as passed (qualify.h, "verdict").
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gufo::qualify {

enum class Verdict { Pass, Fail, Skip };

std::string_view to_string(Verdict verdict);

// One gate inside a stage, e.g. "gufo-tiny-q8_0: candidate within models/limits.json".
struct Check {
  std::string name;
  Verdict verdict = Verdict::Skip;
  std::string detail;  // the numbers behind the verdict, or why it did not run
};

struct StageResult {
  int number = 0;    // 1-6, the order
  std::string name;  // "operators", "numerics", ...
  Verdict verdict = Verdict::Skip;
  std::string reason;  // one line: why this verdict
  double seconds = 0;
  std::vector<Check> checks;
  nlohmann::json data = nlohmann::json::object();  // measurements, for report.json
  std::vector<std::string> plots;                  // PNG files beside the report
  std::string markdown;                            // extra Markdown (tables) for report.md

  // The stage's verdict from its checks: fail if any failed, pass if any passed and none
  // failed, skip if nothing ran; the reason names the first failure.
  void conclude();
};

StageResult skipped_stage(int number, std::string name, std::string reason);

}  // namespace gufo::qualify
