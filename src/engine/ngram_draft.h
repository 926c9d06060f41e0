// Prompt-lookup drafting (speculative decoding without a second model): the tokens that
// followed the latest earlier occurrence of the context's last n tokens, n from ngram_max down
// to ngram_min, are proposed as the next ones. Strong where text repeats its context: code
// edits, agent loops that quote tool results, structured output. Tested by
// tests/unit/engine/speculative_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gufo::engine {

struct NgramDraftParams {
  int32_t ngram_max = 4;  // the longest suffix looked up
  int32_t ngram_min = 2;  // the shortest (one token matches too often to be worth a draft)
};

// Up to `max_tokens` tokens that followed the latest earlier occurrence of the longest suffix
// of `history` (ngram_max down to ngram_min tokens) seen before; empty when none was.
std::vector<int32_t> ngram_draft(std::span<const int32_t> history, int32_t max_tokens,
                                 const NgramDraftParams& params = {});

}  // namespace gufo::engine
