// A set of token ids, stored in whichever form is smallest, as xgrammar's adaptive token mask
// cache does: the ids in it, the trie tokens not in it, or a bitset; and the bitset over a
// vocabulary that masks are assembled in and handed out (64 ids a word), which tests turn into
// a vector<bool> in time proportional to the smaller side.
// Tested by tests/unit/grammar/token_trie_test.cpp.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "grammar/token_trie.h"

namespace gufo::grammar {

using TokenBits = std::vector<uint64_t>;  // bit id % 64 of word id / 64

inline void set_bit(TokenBits& bits, int32_t id) { bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
inline void clear_bit(TokenBits& bits, int32_t id) {
  bits[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63));
}
inline bool has_bit(const TokenBits& bits, int32_t id) {
  return ((bits[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1) != 0;
}
// The bits set in `w`. NOTE(grammar): not std::popcount, which is a library call where the
// build does not assume the POPCNT instruction (x86-64 baseline).
inline int count_bits(uint64_t w) {
  w -= (w >> 1) & 0x5555555555555555ull;
  w = (w & 0x3333333333333333ull) + ((w >> 2) & 0x3333333333333333ull);
  w = (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<int>((w * 0x0101010101010101ull) >> 56);
}
// out[id] = bit id, for n_vocab ids.
void bits_to_bools(const TokenBits& bits, int32_t n_vocab, std::vector<bool>& out);

class TokenSet {
 public:
  TokenSet() = default;  // empty
  // The set of the trie tokens at `runs` of trie.tokens_in_order() ([begin, end) pairs,
  // ascending and disjoint).
  TokenSet(const TokenTrie& trie, const std::vector<std::pair<uint32_t, uint32_t>>& runs);
  // bits |= this set (bits sized for trie.n_vocab()).
  void add_to(const TokenTrie& trie, TokenBits& bits) const;
  size_t stored_bytes() const { return ids_.size() * sizeof(int32_t) + words_.size() * sizeof(uint64_t); }

 private:
  enum class Form : uint8_t { Members, NonMembers, Bits };
  Form form_ = Form::Members;
  std::vector<int32_t> ids_;  // Members: in the set; NonMembers: trie tokens not in it
  TokenBits words_;           // Bits
};

}  // namespace gufo::grammar
