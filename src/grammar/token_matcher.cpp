// MaskCache and TokenMatcher (see token_matcher.h).
#include "grammar/token_matcher.h"

#include <algorithm>
#include <utility>

#include "grammar/reference_mask.h"
#include "grammar/token_set.h"

namespace gufo::grammar {

MaskCache::MaskCache(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), tops_(*grammar_, trie_) {}

size_t MaskCache::n_states() {
  std::lock_guard lock(mutex_);
  return states_.size();
}

void MaskCache::mask(const Matcher& current, TokenBits& out) {
  std::lock_guard lock(mutex_);
  if (states_.size() > kMaxStates) {
    states_.clear();
    masks_.clear();
  }
  if (tops_.n_states() > kMaxStates) tops_.clear();
  if (masks_.size() > kMaxMasks) masks_.clear();
  const uint32_t start = states_.intern(current);
  if (auto it = masks_.find(start); it != masks_.end()) {
    out = it->second;
    return;
  }
  TokenBits allowed;
  if (!from_tops(start, allowed)) reference_walk(states_, *trie_, start, current.can_end(), allowed);
  out = masks_.emplace(start, std::move(allowed)).first->second;
}

bool MaskCache::from_tops(uint32_t start, TokenBits& bits) {
  const Matcher state = states_.state(start);  // a copy: trying tokens may grow states_
  bits.assign(trie_->token_bits().size(), 0);
  std::vector<int32_t> uncertain;
  // For the tokens no top reads past its sentinel, the whole state's step is at most the sum
  // of its stacks' (a stack's frames below its top multiply the frames its top's steps copy);
  // the uncertain ones are tried on the whole state, which counts its own steps.
  size_t stacks = 0;
  size_t frames = 0;
  for (const Stack& stack : state.stacks()) {
    if (stack.empty()) continue;  // complete: reads nothing more
    const TopTokens& top = tops_.of(stack, state.pending());
    if (top.dearest.over) return false;
    stacks += top.dearest.stacks;
    frames += top.dearest.frames * std::max<size_t>(1, stack.size() - top.kept_frames);
    top.accepted.add_to(*trie_, bits);
    uncertain.insert(uncertain.end(), top.uncertain.begin(), top.uncertain.end());
  }
  if (stacks > Matcher::kMaxStacks || frames > Matcher::kMaxFrames) return false;
  // Uncertain for one stack and accepted by another: the first took it below its top, where
  // the whole state's expansion (uncounted by any top) may pass the budget and have the
  // matcher refuse it, so it is tried on the whole state as well.
  for (const int32_t id : uncertain) clear_bit(bits, id);
  for (const int32_t id : uncertain) {
    if (reference_accepts(states_, *trie_, start, id)) set_bit(bits, id);
  }
  if (state.can_end()) {
    for (const int32_t id : trie_->end_tokens()) set_bit(bits, id);
  }
  return true;
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

void TokenMatcher::allowed_tokens(TokenBits& allowed) { masks_->mask(state_, allowed); }

bool TokenMatcher::accept_token(int32_t token) {
  if (token < 0 || token >= trie_->n_vocab()) return false;
  if (is_end_token(token)) {
    if (!state_.can_end()) return false;
    remember(state_);
    return true;  // the state stays complete
  }
  const std::string& bytes = trie_->bytes(token);
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
