// A context-free grammar over Unicode code points, the form every constraint compiles to
// (GBNF text, and later JSON Schema and regular expressions): rules of alternatives, each a
// sequence of symbols, a symbol being a set of code points or another rule. Repetitions and
// groups are already rewritten into rules of their own. The matcher (grammar/matcher.h) runs
// it over bytes. Tested by tests/unit/grammar.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gufo::grammar {

// One code point out of a union of inclusive ranges, or (negated) any code point outside them.
// The queries want the ranges sorted, disjoint and not adjacent: call normalize() after
// building one.
struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;

  void normalize();
  bool contains(uint32_t code_point) const;
  // Whether some code point in [lo, hi] is in the set (a partly read UTF-8 sequence).
  bool intersects(uint32_t lo, uint32_t hi) const;
  // Whether every code point in [lo, hi] is.
  bool contains_all(uint32_t lo, uint32_t hi) const;
};

struct Symbol {
  enum class Kind : uint8_t { Chars, Rule };
  Kind kind = Kind::Chars;
  uint32_t index = 0;  // into Grammar::char_sets or Grammar::rules
};

using Sequence = std::vector<Symbol>;  // empty: matches the empty string

struct Rule {
  std::string name;  // as written, or generated ("value-3") for a group or repetition
  std::vector<Sequence> alternatives;
};

struct Grammar {
  std::vector<Rule> rules;
  std::vector<CharSet> char_sets;
  uint32_t root = 0;
};

}  // namespace gufo::grammar
