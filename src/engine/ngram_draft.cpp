// Prompt-lookup drafting (see ngram_draft.h).
#include "engine/ngram_draft.h"

#include <algorithm>

namespace gufo::engine {

std::vector<int32_t> ngram_draft(std::span<const int32_t> history, int32_t max_tokens, const NgramDraftParams& params) {
  const auto size = static_cast<int64_t>(history.size());
  if (max_tokens <= 0) return {};
  for (int64_t n = std::min<int64_t>(params.ngram_max, size - 1); n >= std::max(1, params.ngram_min); --n) {
    const std::span<const int32_t> suffix = history.subspan(static_cast<size_t>(size - n));
    // The latest start before the suffix's own, so that at least one token follows it.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), history.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(max_tokens, size - from);
      return {history.begin() + from, history.begin() + from + count};
    }
  }
  return {};
}

}  // namespace gufo::engine
