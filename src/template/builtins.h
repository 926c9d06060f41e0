// Built-ins of the template language: filters (x | name), tests (x is name), methods
// (s.startswith(...), d.get(...)), globals (range, namespace, raise_exception, strftime_now),
// and the UTF-8 helpers they share. Errors carry no line; the interpreter adds it.
// Tested through tests/unit/template/template_test.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "template/callable.h"
#include "template/value.h"

namespace gufo::tmpl {

// NOTE(template): limits on untrusted templates and messages; real chat templates stay far below.
constexpr size_t kMaxStringBytes = size_t{64} << 20;  // also the output cap
constexpr size_t kMaxListItems = size_t{1} << 20;     // range() and list growth

// Byte ranges of each code point of `text` (invalid bytes count as one each).
std::vector<std::string_view> split_code_points(const std::string& text);

Result<Value> apply_filter(const std::string& name, const Value& operand, const CallArgs& args);
Result<bool> apply_test(const std::string& name, const Value& operand, const CallArgs& args);
// Whether `name` is a known test (so selectattr/select can reject unknown ones up front).
bool is_known_test(const std::string& name);
Result<Value> call_method(const Value& object, const std::string& name, const CallArgs& args);

// Case mapping as @huggingface/jinja does it (ASCII letters only here): title() upper-cases the
// first letter of each word and leaves the rest; capitalize() upper-cases the first character.
std::string ascii_upper(std::string s);
std::string ascii_lower(std::string s);
std::string title_case(const std::string& s);
std::string capitalize_text(const std::string& s);

// range, namespace, dict, raise_exception, strftime_now.
void add_global_functions(Scope& scope);

// Python-style comparison for sort and <, >: numbers (and bools) with numbers, strings with
// strings; anything else is an error.
Result<int> compare_values(const Value& a, const Value& b, bool case_sensitive = true);

}  // namespace gufo::tmpl
