// The grammar at the level the sampler works at: which tokens of a vocabulary may come next
// (a bitmask, 64 token ids a word: TokenBits), and the state advanced by the chosen token,
// with the last tokens undoable (speculative decoding rolls rejected drafts back). The
// vocabulary is a trie of the tokens' bytes (token_trie.h), built once per model and shared by
// every request. A token with no bytes (a control token) is never allowed, except the end
// tokens once the grammar is complete. Tested by tests/unit/grammar/token_matcher_test.cpp and
// mask_oracle_test.cpp.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/byte_states.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/stack_tokens.h"
#include "grammar/token_set.h"
#include "grammar/token_trie.h"

namespace gufo::grammar {

// What the masks of one grammar over one vocabulary share, kept across tokens: the matcher
// states met so far (interned, with their byte transitions), each state's mask, and the token
// sets of each stack top (stack_tokens.h). A state's first mask is the union of its stacks'
// accepted sets, with the few uncertain tokens tried on the whole state; where the tops'
// walks show that the whole state could pass the matcher's budget, it is the reference walk
// (reference_mask.h) instead, so masks always equal the reference's. Shared by every request
// under the same grammar and vocabulary (they meet the same states and tops). Bounded: past
// kMaxStates states it starts again. Thread-safe.
class MaskCache {
 public:
  MaskCache(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);
  // Bit id of `allowed` for every token id allowed in `state`.
  void mask(const Matcher& state, TokenBits& allowed);
  size_t n_states();  // interned so far

 private:
  // NOTE(grammar): bounds on what a cache holds: states (1 KiB of transitions each), masks
  // (n_vocab bits each: 19 KiB for Qwen3's), both cleared when passed at the start of a mask.
  static constexpr size_t kMaxStates = 1u << 13;
  static constexpr size_t kMaxMasks = 256;
  // The mask from the stack tops' sets; false where the budget could be passed.
  bool from_tops(uint32_t start, TokenBits& allowed);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  ByteStates states_;
  StackTokens tops_;
  std::unordered_map<uint32_t, TokenBits> masks_;
  std::mutex mutex_;
};

class TokenMatcher {
 public:
  // `masks`: a cache shared with other matchers of the same grammar and trie (null: its own).
  TokenMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
               std::shared_ptr<MaskCache> masks = nullptr);

  // Bit id of `allowed` for every token id of the vocabulary allowed next.
  void allowed_tokens(TokenBits& allowed);
  // Advances by `token`; false (and no change) if it is not allowed.
  bool accept_token(int32_t token);
  // Undoes the last `n` accepted tokens (at most kMaxRollback of them).
  void rollback(size_t n);
  static constexpr size_t kMaxRollback = 64;  // states kept for rollback
  // Whether the tokens so far are a whole match (an end token may come).
  bool can_end() const { return state_.can_end(); }
  bool is_end_token(int32_t token) const;

 private:
  std::shared_ptr<const TokenTrie> trie_;
  Matcher state_;
  void remember(Matcher state);

  std::deque<Matcher> history_;  // the state before each of the last kMaxRollback tokens
  std::shared_ptr<MaskCache> masks_;
};

}  // namespace gufo::grammar
