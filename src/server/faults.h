// Faults a server can be told to inject, for the tests that prove a failure is caught: the
// toolchain qualifier's timing gate must fail a server that is a few milliseconds slower
// (tests/unit/qualify/mutants_test.cpp). Set with the environment variable GUFO_FAULTS, a
// comma-separated list of NAME=VALUE; unset or empty, nothing is injected.
//   request_delay_ms=N   every routed request waits N ms (0-60000) before it is handled
// Tested by tests/unit/server/faults_test.cpp.
#pragma once

#include <chrono>
#include <string_view>

#include "core/result.h"

namespace gufo::server {

struct Faults {
  std::chrono::milliseconds request_delay{0};
};

// An error names GUFO_FAULTS and the part that is wrong.
Result<Faults> parse_faults(std::string_view spec);

}  // namespace gufo::server
