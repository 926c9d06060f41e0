#include "qualify/stage.h"

#include <utility>

namespace gufo::qualify {

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Pass:
      return "pass";
    case Verdict::Fail:
      return "fail";
    case Verdict::Skip:
      return "skip";
  }
  return "skip";
}

void StageResult::conclude() {
  int passed = 0;
  int failed = 0;
  const Check* first_failure = nullptr;
  for (const Check& check : checks) {
    if (check.verdict == Verdict::Pass) ++passed;
    if (check.verdict == Verdict::Fail) {
      if (first_failure == nullptr) first_failure = &check;
      ++failed;
    }
  }
  if (failed > 0) {
    verdict = Verdict::Fail;
    reason = std::to_string(failed) + " of " + std::to_string(checks.size()) +
             " checks failed; first: " + first_failure->name + ": " + first_failure->detail;
  } else if (passed > 0) {
    verdict = Verdict::Pass;
    reason = std::to_string(passed) + " checks passed";
    const size_t skipped = checks.size() - static_cast<size_t>(passed);
    if (skipped > 0) reason += ", " + std::to_string(skipped) + " did not run (listed below)";
  } else {
    verdict = Verdict::Skip;
    reason = checks.empty() ? "no check applied" : "no check ran; first: " + checks.front().detail;
  }
}

StageResult skipped_stage(int number, std::string name, std::string reason) {
  StageResult stage;
  stage.number = number;
  stage.name = std::move(name);
  stage.verdict = Verdict::Skip;
  stage.reason = std::move(reason);
  return stage;
}

}  // namespace gufo::qualify
