// CharSet (see grammar.h).
#include "grammar/grammar.h"

namespace gufo::grammar {

bool CharSet::contains(uint32_t code_point) const {
  bool in = false;
  for (const auto& [lo, hi] : ranges) in = in || (code_point >= lo && code_point <= hi);
  return in != negated;
}

bool CharSet::contains_all(uint32_t lo, uint32_t hi) const {
  if (negated) {
    for (const auto& [a, b] : ranges) {
      if (a <= hi && lo <= b) return false;
    }
    return true;
  }
  for (const auto& [a, b] : ranges) {
    if (a <= lo && hi <= b) return true;
  }
  return false;
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges) {
      if (a <= hi && lo <= b) return true;
    }
    return false;
  }
  // Negated: some point of [lo, hi] escapes every range. Walk up from lo past the ranges
  // that cover it (they may overlap and come in any order).
  uint32_t next = lo;
  for (bool moved = true; moved && next <= hi;) {
    moved = false;
    for (const auto& [a, b] : ranges) {
      if (a <= next && next <= b) {
        if (b == UINT32_MAX) return false;
        next = b + 1;
        moved = true;
      }
    }
  }
  return next <= hi;
}

}  // namespace gufo::grammar
