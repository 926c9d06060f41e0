// Helpers for compilers that write GBNF text (json_schema.cpp, regex_to_gbnf.cpp): literals
// and character classes written so that parse_gbnf reads back exactly the code points meant,
// and the JSON string characters a set of code points becomes inside a JSON string.
// Tested through tests/unit/grammar/json_schema_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gufo::grammar {

// Sorted, disjoint inclusive ranges of code points (never surrogates: UTF-8 cannot hold them).
using CodePoints = std::vector<std::pair<uint32_t, uint32_t>>;

inline constexpr uint32_t kLastCodePoint = 0x10FFFF;

// The value of hex digit `c`, or -1.
inline int hex_value(uint32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

// "( a | b | ... )", or the one alternative alone, or "" for none.
std::string gbnf_alternatives(const std::vector<std::string>& alternatives);

// `bytes` (UTF-8) as a GBNF "literal".
std::string gbnf_literal(std::string_view bytes);
// A GBNF [class] of `ranges` (non-empty).
std::string gbnf_class(const CodePoints& ranges);

// Sorts and merges; drops surrogates.
CodePoints normalized(const CodePoints& ranges);
CodePoints complement(const CodePoints& ranges);  // within U+0000..U+10FFFF
CodePoints intersection(const CodePoints& a, const CodePoints& b);

// The JSON string text of one code point of `set`, in the canonical escaping that
// JSON.stringify and nlohmann's dump() write: \" \\ \b \f \n \r \t, \u00xx (lower-case hex)
// for the other control characters, every other code point raw. A GBNF expression, or ""
// when the set is empty.
std::string json_char_in(const CodePoints& set);

// The canonical JSON text of control character or quote/backslash `cp` (cp < 0x20, '"' or '\\').
std::string canonical_escape(uint32_t cp);

}  // namespace gufo::grammar
