// The plain token mask, kept as the oracle of the fast one (token_matcher.h) and as its
// fallback: every token of the trie tried from the matcher's state, one byte transition at a
// time, a subtree skipped as soon as its byte is refused. Exact for every state, and slow for a
// state's first mask where most tokens fit (inside a string: a walk of the whole trie).
// Tested by tests/unit/grammar/token_matcher_test.cpp (against trying every token alone).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "grammar/byte_states.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_set.h"
#include "grammar/token_trie.h"

namespace gufo::grammar {

// Bit id set for every token of `trie` allowed from `start` (a state of `states`), end tokens
// by `can_end`.
void reference_walk(ByteStates& states, const TokenTrie& trie, uint32_t start, bool can_end, TokenBits& allowed);

// Whether `token`'s bytes are read from `start`, by the same transitions as the walk.
bool reference_accepts(ByteStates& states, const TokenTrie& trie, uint32_t start, int32_t token);

// The reference mask with its own states (their transitions kept, every mask walked): the
// oracle of tests. Each byte is stepped alone (no twin bytes), so that the oracle does not
// share the fast mask's shortcuts. Unbounded: one per test.
class ReferenceMasks {
 public:
  ReferenceMasks(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);
  void mask(const Matcher& state, std::vector<bool>& allowed);

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  ByteStates states_{/*share_twins=*/false};
  std::mutex mutex_;
};

}  // namespace gufo::grammar
