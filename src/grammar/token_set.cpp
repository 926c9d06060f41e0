// TokenSet and bits_to_bools (see token_set.h).
#include "grammar/token_set.h"

#include <bit>

namespace gufo::grammar {

void bits_to_bools(const TokenBits& bits, int32_t n_vocab, std::vector<bool>& out) {
  size_t n_set = 0;
  for (const uint64_t w : bits) n_set += static_cast<size_t>(count_bits(w));
  // Fill with the majority value, then visit only the minority's bits.
  const bool majority = n_set * 2 > static_cast<size_t>(n_vocab);
  out.assign(static_cast<size_t>(n_vocab), majority);
  for (size_t w = 0; w < bits.size(); ++w) {
    uint64_t minority = majority ? ~bits[w] : bits[w];
    while (minority != 0) {
      const size_t id = w * 64 + static_cast<size_t>(std::countr_zero(minority));
      minority &= minority - 1;
      if (id < out.size()) out[id] = !majority;
    }
  }
}

TokenSet::TokenSet(const TokenTrie& trie, const std::vector<std::pair<uint32_t, uint32_t>>& runs) {
  const auto& order = trie.tokens_in_order();
  size_t n_members = 0;
  for (const auto& [begin, end] : runs) n_members += end - begin;
  const size_t n_others = order.size() - n_members;
  // NOTE(grammar): a list costs 32 bits an id, a bitset one bit a vocabulary id.
  const size_t bitset_ids = static_cast<size_t>(trie.n_vocab()) / 32;
  if (n_members <= n_others && n_members <= bitset_ids) {
    form_ = Form::Members;
    ids_.reserve(n_members);
    for (const auto& [begin, end] : runs) ids_.insert(ids_.end(), order.begin() + begin, order.begin() + end);
  } else if (n_others <= bitset_ids) {
    form_ = Form::NonMembers;
    ids_.reserve(n_others);
    uint32_t next = 0;
    for (const auto& [begin, end] : runs) {
      ids_.insert(ids_.end(), order.begin() + next, order.begin() + begin);
      next = end;
    }
    ids_.insert(ids_.end(), order.begin() + next, order.end());
  } else {
    form_ = Form::Bits;
    if (n_members <= n_others) {
      words_.assign((static_cast<size_t>(trie.n_vocab()) + 63) / 64, 0);
      for (const auto& [begin, end] : runs) {
        for (uint32_t i = begin; i < end; ++i) set_bit(words_, order[i]);
      }
    } else {  // all the trie's tokens, less the others: the fewer bit writes
      words_ = trie.token_bits();
      uint32_t next = 0;
      for (const auto& [begin, end] : runs) {
        for (uint32_t i = next; i < begin; ++i) clear_bit(words_, order[i]);
        next = end;
      }
      for (uint32_t i = next; i < order.size(); ++i) clear_bit(words_, order[i]);
    }
  }
}

void TokenSet::add_to(const TokenTrie& trie, TokenBits& bits) const {
  switch (form_) {
    case Form::Members:
      for (const int32_t id : ids_) set_bit(bits, id);
      return;
    case Form::Bits:
      for (size_t w = 0; w < bits.size(); ++w) bits[w] |= words_[w];
      return;
    case Form::NonMembers: {
      TokenBits members = trie.token_bits();
      for (const int32_t id : ids_) clear_bit(members, id);
      for (size_t w = 0; w < bits.size(); ++w) bits[w] |= members[w];
      return;
    }
  }
}

}  // namespace gufo::grammar
