// CharSet (see grammar.h).
#include "grammar/grammar.h"

#include <algorithm>

namespace gufo::grammar {

void CharSet::normalize() {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& [lo, hi] : ranges) {
    if (!merged.empty() && (lo <= merged.back().second || lo - 1 == merged.back().second)) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.emplace_back(lo, hi);
    }
  }
  ranges = std::move(merged);
}

namespace {

// The range that holds `code_point`, or nullptr (ranges sorted and disjoint: binary search).
const std::pair<uint32_t, uint32_t>* range_of(const std::vector<std::pair<uint32_t, uint32_t>>& ranges,
                                              uint32_t code_point) {
  auto after = std::upper_bound(ranges.begin(), ranges.end(), code_point,
                                [](uint32_t cp, const auto& range) { return cp < range.first; });
  if (after == ranges.begin()) return nullptr;
  const auto& range = *(after - 1);
  return code_point <= range.second ? &range : nullptr;
}

// Whether some range meets [lo, hi].
bool meets(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, uint32_t lo, uint32_t hi) {
  auto after = std::upper_bound(ranges.begin(), ranges.end(), hi,
                                [](uint32_t cp, const auto& range) { return cp < range.first; });
  return after != ranges.begin() && (after - 1)->second >= lo;
}

}  // namespace

bool CharSet::contains(uint32_t code_point) const { return (range_of(ranges, code_point) != nullptr) != negated; }

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) return meets(ranges, lo, hi);
  // Some point of [lo, hi] outside every range: lo itself, or the point after lo's range
  // (merged ranges leave a gap after each).
  const auto* range = range_of(ranges, lo);
  return range == nullptr || range->second < hi;
}

bool CharSet::contains_all(uint32_t lo, uint32_t hi) const {
  if (negated) return !meets(ranges, lo, hi);
  const auto* range = range_of(ranges, lo);
  return range != nullptr && range->second >= hi;
}

}  // namespace gufo::grammar
