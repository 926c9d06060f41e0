// TokenTrie and TokenMatcher (see token_matcher.h).
#include "grammar/token_matcher.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace gufo::grammar {

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes, std::vector<int32_t> end_tokens)
    : bytes_(token_bytes), end_tokens_(std::move(end_tokens)), n_vocab_(static_cast<int32_t>(token_bytes.size())) {
  // Tokens in byte order; then each node's children are the distinct next bytes of a run of
  // tokens that share its prefix, laid out breadth first so that siblings are contiguous.
  std::vector<int32_t> order(token_bytes.size());
  std::iota(order.begin(), order.end(), 0);
  order.erase(std::remove_if(order.begin(), order.end(), [&](int32_t id) { return token_bytes[id].empty(); }),
              order.end());
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return token_bytes[a] < token_bytes[b]; });
  struct Pending {
    uint32_t node;
    size_t begin, end;  // the run of `order` below this node
    size_t depth;
  };
  nodes_.push_back(Node{});
  std::vector<Pending> queue = {{0, 0, order.size(), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Pending p = queue[q];
    size_t i = p.begin;
    nodes_[p.node].first_token = static_cast<uint32_t>(ends_.size());
    while (i < p.end && token_bytes[order[i]].size() == p.depth) {
      ends_.push_back(order[i++]);
      ++nodes_[p.node].n_tokens;  // distinct ids with equal bytes: few (uint16 is plenty)
    }
    nodes_[p.node].first_child = static_cast<uint32_t>(nodes_.size());
    while (i < p.end) {
      const char byte = token_bytes[order[i]][p.depth];
      size_t j = i;
      while (j < p.end && token_bytes[order[j]][p.depth] == byte) ++j;
      const auto child = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(Node{.first_child = 0, .n_children = 0, .first_token = 0, .n_tokens = 0,
                            .byte = static_cast<uint8_t>(byte)});
      ++nodes_[p.node].n_children;
      queue.push_back({child, i, j, p.depth + 1});
      i = j;
    }
  }
}

MaskCache::MaskCache(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)) {}

size_t MaskCache::n_states() {
  std::lock_guard lock(mutex_);
  return states_.size();
}

void MaskCache::clear() {
  states_.clear();
  ids_.clear();
  transitions_.clear();
  masks_.clear();
}

uint32_t MaskCache::intern(Matcher state) {
  std::string key = state.key();
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(states_.size());
  states_.push_back(std::move(state));
  transitions_.emplace_back();
  transitions_.back().fill(kUnknown);
  ids_.emplace(std::move(key), id);
  return id;
}

int32_t MaskCache::step(uint32_t state, uint8_t byte) {
  const int32_t known = transitions_[state][byte];
  if (known != kUnknown) return known;
  Matcher next = states_[state];
  int32_t to = kRefused;
  if (next.accept_byte(byte) && (states_.size() < kMaxWalkStates || ids_.contains(next.key()))) {
    to = static_cast<int32_t>(intern(std::move(next)));
  }
  transitions_[state][byte] = to;  // after intern(): it may have grown transitions_
  return to;
}

void MaskCache::mask(const Matcher& current, std::vector<bool>& out) {
  std::lock_guard lock(mutex_);
  if (states_.size() > kMaxStates) clear();
  if (masks_.size() > kMaxMasks) masks_.clear();
  const uint32_t start = intern(current);
  if (auto it = masks_.find(start); it != masks_.end()) {
    out = it->second;
    return;
  }
  std::vector<bool> allowed(static_cast<size_t>(trie_->n_vocab()), false);
  if (current.can_end()) {
    for (int32_t id : trie_->end_tokens()) allowed[static_cast<size_t>(id)] = true;
  }
  // Depth first over the trie; a subtree is skipped as soon as its byte is refused.
  const auto& nodes = trie_->nodes_;
  std::vector<std::pair<uint32_t, uint32_t>> todo = {{0, start}};  // (node, state)
  while (!todo.empty()) {
    const auto [node, state] = todo.back();
    todo.pop_back();
    for (uint32_t c = 0; c < nodes[node].n_children; ++c) {
      const uint32_t child = nodes[node].first_child + c;
      const int32_t next = step(state, nodes[child].byte);
      if (next == kRefused) continue;
      for (uint32_t t = 0; t < nodes[child].n_tokens; ++t) {
        allowed[static_cast<size_t>(trie_->ends_[nodes[child].first_token + t])] = true;
      }
      if (nodes[child].n_children > 0) todo.emplace_back(child, static_cast<uint32_t>(next));
    }
  }
  out = masks_.emplace(start, std::move(allowed)).first->second;
}

TokenMatcher::TokenMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                           std::shared_ptr<MaskCache> masks)
    : trie_(trie),
      state_(grammar),
      masks_(masks ? std::move(masks) : std::make_shared<MaskCache>(std::move(grammar), std::move(trie))) {}

bool TokenMatcher::is_end_token(int32_t token) const {
  const auto& ends = trie_->end_tokens();
  return std::find(ends.begin(), ends.end(), token) != ends.end();
}

void TokenMatcher::allowed_tokens(std::vector<bool>& allowed) { masks_->mask(state_, allowed); }

bool TokenMatcher::accept_token(int32_t token) {
  if (token < 0 || token >= trie_->n_vocab()) return false;
  if (is_end_token(token)) {
    if (!state_.can_end()) return false;
    remember(state_);
    return true;  // the state stays complete
  }
  const std::string& bytes = trie_->bytes_[static_cast<size_t>(token)];
  if (bytes.empty()) return false;
  Matcher next = state_;
  if (!next.accept(bytes)) return false;
  remember(std::move(state_));
  state_ = std::move(next);
  return true;
}

void TokenMatcher::remember(Matcher state) {
  history_.push_back(std::move(state));
  if (history_.size() > kMaxRollback) history_.pop_front();
}

void TokenMatcher::rollback(size_t n) {
  n = std::min(n, history_.size());
  if (n == 0) return;
  state_ = history_[history_.size() - n];
  history_.erase(history_.end() - static_cast<std::ptrdiff_t>(n), history_.end());
}

}  // namespace gufo::grammar
