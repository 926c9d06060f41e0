// Operators of template expressions with Python semantics: arithmetic on int64 with overflow
// reported as an error (never UB), floor division and modulo as Python, string and list
// concatenation and repetition (size-capped), comparisons, `in`, `~`, and slicing.
// Tested through tests/unit/template/template_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "template/value.h"

namespace gufo::tmpl {

Result<Value> binary_op(const std::string& op, const Value& lhs, const Value& rhs);
Result<Value> unary_op(const std::string& op, const Value& operand);
// Python slicing (negative indices and steps) of a list or string (by code point).
Result<Value> slice_value(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
                          std::optional<int64_t> step);

}  // namespace gufo::tmpl
