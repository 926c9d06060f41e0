// The functional suite (tests/functional, node's test runner) against one build's `gufo
// serve`, as a check: stage 3 runs the profile's suites on each build, stage 4 the `pressure`
// profile on the candidate.
#pragma once

#include <string>
#include <vector>

#include "qualify/context.h"
#include "qualify/stage.h"

namespace gufo::qualify {

// Runs tests/functional/NAME.test.mjs for each of `names` against `build`'s gufo on the shipped
// model; passes when some test ran and none failed. Records {"passed", "failed", "seconds"}
// under stage.data[KEY] and logs to logs/KEY-functional.*, KEY being data_key or else the
// build's role.
Check suite_check(Context& context, StageResult& stage, const Build& build, const std::vector<std::string>& names,
                  const std::string& data_key = "");

}  // namespace gufo::qualify
