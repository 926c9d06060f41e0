// Faults a process can be told to inject, for the tests that prove a failure is caught: the
// toolchain qualifier's timing gate must fail a server that is a few milliseconds slower, and
// its memory-pressure stage must see a failed allocation or a lost device fail only the
// requests they touch. Set with the environment variable GUFO_FAULTS, a comma-separated list
// of NAME=VALUE; unset or empty, nothing is injected.
//   request_delay_ms=N   every routed request of `gufo serve` waits N ms (0-60000) first
//   forward_oom_at=N     the backend's N-th forward call fails as out of memory (N >= 1)
//   device_lost_at=N     the N-th forward call and every one after fail as a lost device
// Tested by tests/unit/backend/faults_test.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gufo {

struct Faults {
  std::chrono::milliseconds request_delay{0};
  int64_t forward_oom_at = 0;  // 0: never
  int64_t device_lost_at = 0;  // 0: never
  bool any_forward_fault() const { return forward_oom_at > 0 || device_lost_at > 0; }
  // What is injected, for the warning a process prints ("" when nothing is).
  std::string describe() const;
};

// An error names GUFO_FAULTS and the part that is wrong.
Result<Faults> parse_faults(std::string_view spec);

// GUFO_FAULTS of this process, parsed (nothing injected when it is unset).
Result<Faults> faults_from_environment();

}  // namespace gufo
