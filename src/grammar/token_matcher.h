// The grammar at the level the sampler works at: which tokens of a vocabulary may come next
// (a bitmask), and the state advanced by the chosen token, with the last tokens undoable
// (speculative decoding rolls rejected drafts back). The vocabulary is a trie of the tokens'
// bytes, built once per model (TokenTrie) and shared by every request: a mask is one walk of
// the trie, trying each byte once for all the tokens that share a prefix. A token with no
// bytes (a control token) is never allowed, except the end tokens once the grammar is
// complete. Tested by tests/unit/grammar/token_matcher_test.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace gufo::grammar {

class TokenTrie {
 public:
  // token_bytes[id]: what token id stands for ("" for tokens a grammar never allows);
  // end_tokens: those that end a generation (allowed once the grammar is complete).
  TokenTrie(const std::vector<std::string>& token_bytes, std::vector<int32_t> end_tokens);

  int32_t n_vocab() const { return n_vocab_; }
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }

 private:
  friend class MaskCache;
  friend class TokenMatcher;
  struct Node {
    uint32_t first_child = 0;  // children are nodes first_child .. first_child + n_children - 1
    uint32_t n_children = 0;
    uint32_t first_token = 0;  // tokens whose bytes end here: ends_[first_token .. + n_tokens)
    uint16_t n_tokens = 0;
    uint8_t byte = 0;          // the byte that leads here from the parent
  };
  std::vector<Node> nodes_;  // nodes_[0] is the root (the empty prefix)
  std::vector<int32_t> ends_;
  std::vector<std::string> bytes_;
  std::vector<int32_t> end_tokens_;
  int32_t n_vocab_ = 0;
};

// What the masks of one grammar over one vocabulary share, kept across tokens: the matcher
// states met so far (interned), the byte transitions between them, and each state's mask.
// Inside a JSON string the state after a token is the state before it, so most masks are
// looked up, and a new state's mask walks the trie by table lookups, not matcher copies.
// Shared by every request under the same grammar and vocabulary (they meet the same states),
// so after the first few answers most masks are looked up. Bounded: past kMaxStates states it
// starts again. Thread-safe.
class MaskCache {
 public:
  MaskCache(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);
  // allowed[id] for every token id, in `state`.
  void mask(const Matcher& state, std::vector<bool>& allowed);
  size_t n_states();  // interned so far

 private:
  // NOTE(grammar): bounds on what a cache holds: states (1 KiB of transitions each), masks
  // (n_vocab bits each: 19 KiB for Qwen3's), both cleared when passed at the start of a mask;
  // within one walk, a state past kMaxWalkStates is not made: its byte is refused (only a
  // grammar built to explode gets there).
  static constexpr size_t kMaxStates = 1u << 13;
  static constexpr size_t kMaxMasks = 256;
  static constexpr size_t kMaxWalkStates = 1u << 15;
  static constexpr int32_t kRefused = -1;
  static constexpr int32_t kUnknown = -2;
  uint32_t intern(Matcher state);
  int32_t step(uint32_t state, uint8_t byte);  // kRefused or the next state
  void clear();

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<Matcher> states_;
  std::unordered_map<std::string, uint32_t> ids_;       // Matcher::key() -> index in states_
  std::vector<std::array<int32_t, 256>> transitions_;   // [state][byte]: next, kRefused or kUnknown
  std::unordered_map<uint32_t, std::vector<bool>> masks_;
  std::mutex mutex_;
};

class TokenMatcher {
 public:
  // `masks`: a cache shared with other matchers of the same grammar and trie (null: its own).
  TokenMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
               std::shared_ptr<MaskCache> masks = nullptr);

  // allowed[id] for every token id of the vocabulary.
  void allowed_tokens(std::vector<bool>& allowed);
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
