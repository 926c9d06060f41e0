// JSON Schema's `pattern` (an ECMA-262 regular expression, searched for anywhere in the
// string unless anchored) as a GBNF expression over the JSON text between a string's quotes.
// The common subset: literals, escapes (\d \D \w \W \s \S \t \n \r \f \v \0 \xHH \uHHHH and
// escaped punctuation), '.', [classes] with ranges and negation, (groups), (?:groups), '|',
// ? * + {m} {m,} {m,n} (lazy forms too: same language), and ^ / $ at the very start / end of
// a top-level alternative. Anything else (backreferences, lookaround, \b, \p{..}, named
// groups, anchors elsewhere) is an error naming it. Code points, not UTF-16 units, are what
// '.' and classes match (ECMA's 'u' mode). Characters are written in canonical JSON escaping
// (gbnf_text.h: json_char_in).
// Tested by tests/unit/grammar/json_schema_test.cpp.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gufo::grammar {

// `any_char`: the GBNF expression of one JSON string character of any code point, for an
// unanchored end. `max_repeat`: the largest m or n of {m,n} accepted.
Result<std::string> regex_to_gbnf(std::string_view pattern, std::string_view any_char, int max_repeat);

}  // namespace gufo::grammar
