// llama.cpp's GBNF grammar text (grammars/README.md of llama.cpp), so that existing grammars
// work unchanged: `name ::= alternatives` rules (a name is letters, digits, '-' or '_'),
// "literals" and [character classes] with \x \u \U \t \n \r escapes, [^negated] classes, '.'
// (any code point), ( groups ), `|`, `*` `+` `?` and {m}, {m,}, {m,n}, {,n} repetitions, and
// `#` comments. A rule ends at a newline except after `::=` or `|` or inside parentheses. The
// grammar starts at `root`. Errors name the line and column, and what is wrong: an undefined
// rule, left recursion (the matcher could not run it), a rule with no finite match.
// Tested by tests/unit/grammar/gbnf_test.cpp.
#pragma once

#include <string_view>

#include "core/result.h"
#include "grammar/grammar.h"

namespace gufo::grammar {

// Bounds that keep a hostile grammar from taking unbounded time or memory.
struct GbnfLimits {
  size_t max_bytes = size_t{1} << 20;  // of grammar text
  size_t max_symbols = 1u << 20;       // after repetitions are expanded
  int max_nesting = 128;               // of parentheses
  int max_repeat = 10'000;             // the largest m or n of {m,n}
};

Result<Grammar> parse_gbnf(std::string_view text, const GbnfLimits& limits = {});

// What the checks of parse_gbnf do, for grammars built by other compilers (JSON Schema):
// every rule reference defined, no left recursion, the root able to match something finite.
Status check_grammar(const Grammar& grammar);

}  // namespace gufo::grammar
