// The oracle check the mask tests share: the fast mask (MaskCache) against the reference walk
// (ReferenceMasks: the algorithm masks used before per-stack token sets) at every step of
// random generations, with rollbacks; a difference names the step and the tokens.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/reference_mask.h"
#include "grammar/token_matcher.h"
#include "grammar_test_util.h"

namespace gufo::grammar {

// The ids where two masks differ, with their bytes, for a failure message.
inline std::string mask_difference(const TokenTrie& trie, const std::vector<bool>& fast,
                                   const std::vector<bool>& reference) {
  std::string out;
  int shown = 0;
  for (size_t id = 0; id < fast.size() && id < reference.size(); ++id) {
    if (fast[id] == reference[id]) continue;
    if (++shown > 8) return out + " ...";
    out += " " + std::to_string(id) + (fast[id] ? "+" : "-") +
           testing::PrintToString(trie.bytes(static_cast<int32_t>(id)));
  }
  return out;
}

// The allowed token that reads the longest prefix of `text`, or -1.
inline int32_t longest_prefix_token(const TokenTrie& trie, const std::vector<bool>& allowed, std::string_view text) {
  int32_t best = -1;
  size_t best_size = 0;
  for (size_t id = 0; id < allowed.size(); ++id) {
    const std::string& bytes = trie.bytes(static_cast<int32_t>(id));
    if (allowed[id] && bytes.size() > best_size && text.starts_with(bytes)) {
      best = static_cast<int32_t>(id);
      best_size = bytes.size();
    }
  }
  return best;
}

// `n_walks` generations of up to `max_tokens` tokens under `grammar`, every mask compared
// with the reference. Each token is drawn from the mask, half the time the one that follows
// `guide` (an answer that leads into the grammar's deeper states) where one does; now and
// then the last tokens are rolled back and the mask compared again. `cache`: shared across
// walks (null: a fresh one each).
inline void expect_masks_match_reference(const std::shared_ptr<const Grammar>& grammar,
                                         const std::shared_ptr<const TokenTrie>& trie, std::string_view guide,
                                         uint32_t seed, int n_walks, int max_tokens,
                                         const std::shared_ptr<MaskCache>& cache) {
  std::mt19937 rng(seed);
  ReferenceMasks reference(grammar, trie);
  for (int walk = 0; walk < n_walks; ++walk) {
    TokenMatcher tokens(grammar, trie, cache);
    std::vector<Matcher> states = {Matcher(grammar)};  // the byte matcher after each token
    std::vector<size_t> guided = {0};                  // how much of `guide` each has read
    std::vector<bool> fast;
    std::vector<bool> slow;
    for (int step = 0; step < max_tokens; ++step) {
      fast = allowed_bools(tokens, *trie);
      reference.mask(states.back(), slow);
      ASSERT_EQ(fast, slow) << "seed " << seed << " walk " << walk << " step " << step << ":"
                            << mask_difference(*trie, fast, slow);
      std::vector<int32_t> allowed;
      for (size_t id = 0; id < fast.size(); ++id) {
        if (fast[id]) allowed.push_back(static_cast<int32_t>(id));
      }
      if (allowed.empty()) break;
      int32_t token = rng() % 2 == 0 ? longest_prefix_token(*trie, fast, guide.substr(guided.back())) : -1;
      const bool on_guide = token >= 0;
      if (!on_guide) token = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      ASSERT_TRUE(tokens.accept_token(token));
      if (tokens.is_end_token(token)) break;
      Matcher next = states.back();
      ASSERT_TRUE(next.accept(trie->bytes(token)));
      states.push_back(std::move(next));
      guided.push_back(on_guide ? guided.back() + trie->bytes(token).size() : guided.back());
      if (states.size() > 3 && rng() % 5 == 0) {  // a rejected draft: back 1..3 tokens
        const size_t back = 1 + rng() % 3;
        tokens.rollback(back);
        states.erase(states.end() - static_cast<std::ptrdiff_t>(back), states.end());
        guided.erase(guided.end() - static_cast<std::ptrdiff_t>(back), guided.end());
      }
    }
  }
}

}  // namespace gufo::grammar
