// JSON numbers between bounds as GBNF, for JSON Schema's minimum/maximum (json_schema.cpp).
// Integer ranges become digit-range rules as llama.cpp's json-schema-to-grammar writes them
// ([lo, hi] split by digit count, then by leading digit); a number between integer bounds is
// its integer part in a range and a fraction whose class (any, all zeros, not all zeros)
// depends on whether the integer part sits on a bound. Bounded numbers are written without
// an exponent (1e2 is refused where 100 is accepted: stricter, never weaker).
// Tested by tests/unit/grammar/json_schema_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gufo::grammar {

// Bounds are limited to |value| <= kMaxBound so that negating one never overflows.
inline constexpr int64_t kMaxBound = 1'000'000'000'000'000'000;

struct Bound {
  int64_t value = 0;
  bool exclusive = false;
};

// A GBNF expression for the JSON numbers x with lo <= x <= hi (each optional; exclusive
// ones strict). `integer`: only integral x, written "n" or "n.0" (one zero after the point).
// "" when no number is in range.
std::string bounded_number_gbnf(std::optional<Bound> lo, std::optional<Bound> hi, bool integer);

// Canonical decimal integers (no sign, no leading zero) in [lo, hi] (hi unset: no bound);
// 0 <= lo <= hi. A GBNF expression.
std::string digits_in_range(int64_t lo, std::optional<int64_t> hi);

}  // namespace gufo::grammar
