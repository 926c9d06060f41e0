// GUFO_CHECK: programmer invariants, on in every build type (never used on input data:
// input problems are reported through Result/Error, see core/result.h).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace gufo::detail {
[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "gufo: internal invariant failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}
}  // namespace gufo::detail

#define GUFO_CHECK(cond) ((cond) ? static_cast<void>(0) : ::gufo::detail::check_failed(#cond, __FILE__, __LINE__))
