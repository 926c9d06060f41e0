// One-line, human-readable text for metadata values, abbreviated for listings such as
// `gufo inspect`: [151936 x string] ["!", "\"", "#", ...]. Strings are escaped (text.h).
// Tested by tests/unit/gguf/value_text_test.cpp.
#pragma once

#include <cstddef>
#include <string>

#include "gguf/value.h"

namespace gufo::gguf {

// NOTE(inspect): defaults sized for a terminal line: a vocabulary shows its first 8 tokens;
// a chat template its first 160 bytes; a whole value never more than 32 array elements,
// however deeply arrays nest.
struct TextLimits {
  size_t max_array_items = 8;         // elements shown per array
  size_t max_total_items = 32;        // elements shown in all arrays of one value together
  size_t max_string_bytes = 160;      // of a string value
  size_t max_item_string_bytes = 48;  // of a string inside an array
};

// The shortest decimal text that reads back to the same float/double ("0.1", "1e-05",
// "nan", "inf", "-inf").
std::string float_to_text(double value, bool single_precision);

// The value on one line. A cut string gets a note with its full size; an array starts
// with "[<length> x <element type>]" and ends its elements with "..." when cut.
std::string value_to_text(const Value& value, const TextLimits& limits = {});
std::string array_to_text(const Array& array, const TextLimits& limits = {});

}  // namespace gufo::gguf
