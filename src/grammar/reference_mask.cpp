// reference_walk and ReferenceMasks (see reference_mask.h).
#include "grammar/reference_mask.h"

#include <utility>

namespace gufo::grammar {

void reference_walk(ByteStates& states, const TokenTrie& trie, uint32_t start, bool can_end, TokenBits& allowed) {
  allowed.assign((static_cast<size_t>(trie.n_vocab()) + 63) / 64, 0);
  if (can_end) {
    for (int32_t id : trie.end_tokens()) set_bit(allowed, id);
  }
  // Depth first over the trie; a subtree is skipped as soon as its byte is refused.
  const auto& nodes = trie.nodes();
  const auto& tokens = trie.tokens_in_order();
  std::vector<std::pair<uint32_t, uint32_t>> todo = {{0, start}};  // (node, state)
  while (!todo.empty()) {
    const auto [node, state] = todo.back();
    todo.pop_back();
    for (uint32_t c = 0; c < nodes[node].n_children; ++c) {
      const uint32_t child = nodes[node].first_child + c;
      const int32_t next = states.step(state, nodes[child].byte);
      if (next == ByteStates::kRefused) continue;
      for (uint32_t t = 0; t < nodes[child].n_tokens; ++t) {
        set_bit(allowed, tokens[nodes[child].first_token + t]);
      }
      if (nodes[child].n_children > 0) todo.emplace_back(child, static_cast<uint32_t>(next));
    }
  }
}

bool reference_accepts(ByteStates& states, const TokenTrie& trie, uint32_t start, int32_t token) {
  int32_t state = static_cast<int32_t>(start);
  for (const char c : trie.bytes(token)) {
    state = states.step(static_cast<uint32_t>(state), static_cast<uint8_t>(c));
    if (state == ByteStates::kRefused) return false;
  }
  return true;
}

ReferenceMasks::ReferenceMasks(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)) {}

void ReferenceMasks::mask(const Matcher& state, std::vector<bool>& allowed) {
  std::lock_guard lock(mutex_);
  const uint32_t start = states_.intern(state);
  TokenBits bits;
  reference_walk(states_, *trie_, start, state.can_end(), bits);
  bits_to_bools(bits, trie_->n_vocab(), allowed);
}

}  // namespace gufo::grammar
