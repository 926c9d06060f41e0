// KvBlockPool (see kv_blocks.h).
#include "engine/kv_blocks.h"

#include <algorithm>

#include "core/check.h"
#include "core/fnv1a.h"

namespace gufo::engine {

KvBlockPool::KvBlockPool(int32_t n_blocks, int32_t block_size)
    : block_size_(block_size), blocks_(static_cast<size_t>(n_blocks)) {
  // Lowest ids first out of the free list.
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

uint64_t KvBlockPool::key(int32_t previous, uint64_t previous_generation, std::span<const int32_t> tokens) const {
  // FNV-1a over the chain link and the tokens; equal keys are checked token by token.
  uint64_t h = fnv1a_64_word(static_cast<uint64_t>(static_cast<int64_t>(previous)), kFnv1a64Offset);
  h = fnv1a_64_word(previous_generation, h);
  for (int32_t t : tokens) h = fnv1a_64_word(static_cast<uint32_t>(t), h);
  return h;
}

std::optional<int32_t> KvBlockPool::find(int32_t previous, std::span<const int32_t> tokens) const {
  const uint64_t previous_generation = generation_of(previous);
  const auto [first, last] = by_key_.equal_range(key(previous, previous_generation, tokens));
  for (auto it = first; it != last; ++it) {
    const Block& b = blocks_[static_cast<size_t>(it->second)];
    if (b.previous == previous && b.previous_generation == previous_generation &&
        std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end())) {
      return it->second;
    }
  }
  return std::nullopt;
}

std::vector<int32_t> KvBlockPool::acquire_prefix(std::span<const int32_t> tokens, int64_t max_tokens) {
  std::vector<int32_t> held;
  int32_t previous = -1;
  const int64_t limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
  for (int64_t at = 0; at + block_size_ <= limit; at += block_size_) {
    const std::optional<int32_t> block = find(previous, tokens.subspan(static_cast<size_t>(at), block_size_));
    if (!block) break;
    Block& b = blocks_[static_cast<size_t>(*block)];
    leave_lru(b);
    ++b.refs;
    held.push_back(*block);
    previous = *block;
  }
  return held;
}

void KvBlockPool::leave_lru(Block& b) {
  if (!b.in_lru) return;
  lru_.erase(b.lru_at);
  b.in_lru = false;
}

void KvBlockPool::uncache(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  if (!b.cached) return;
  auto& index = b.tail ? tails_ : by_key_;
  const uint64_t k = key(b.previous, b.previous_generation, b.tail ? std::span<const int32_t>() : b.tokens);
  const auto [first, last] = index.equal_range(k);
  for (auto it = first; it != last; ++it) {
    if (it->second == block) {
      index.erase(it);
      break;
    }
  }
  b.cached = false;
  b.tail = false;
  b.tokens.clear();
}

std::optional<int32_t> KvBlockPool::allocate() {
  int32_t block = -1;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    block = lru_.front();
    lru_.pop_front();
    Block& b = blocks_[static_cast<size_t>(block)];
    b.in_lru = false;
    uncache(block);
  } else {
    return std::nullopt;
  }
  Block& b = blocks_[static_cast<size_t>(block)];
  ++b.generation;
  b.refs = 1;
  return block;
}

void KvBlockPool::release(std::span<const int32_t> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    Block& b = blocks_[static_cast<size_t>(*it)];
    GUFO_CHECK(b.refs > 0);
    if (--b.refs > 0) continue;
    if (b.cached) {
      b.lru_at = lru_.insert(lru_.end(), *it);
      b.in_lru = true;
    } else {
      free_.push_back(*it);
    }
  }
}

int32_t KvBlockPool::register_full(int32_t block, int32_t previous, std::span<const int32_t> tokens) {
  Block& b = blocks_[static_cast<size_t>(block)];
  if (static_cast<int32_t>(tokens.size()) != block_size_) return -1;
  if (const std::optional<int32_t> cached = find(previous, tokens)) return *cached;
  if (b.cached) return -1;
  b.previous = previous;
  b.previous_generation = generation_of(previous);
  b.tokens.assign(tokens.begin(), tokens.end());
  b.cached = true;
  by_key_.emplace(key(b.previous, b.previous_generation, b.tokens), block);
  return block;
}

uint64_t KvBlockPool::generation_of(int32_t block) const {
  return block >= 0 ? blocks_[static_cast<size_t>(block)].generation : 0;
}

bool KvBlockPool::follows(const Block& b, int32_t previous) const {
  return b.previous == previous && b.previous_generation == generation_of(previous);
}

void KvBlockPool::register_tail(int32_t block, int32_t previous, std::span<const int32_t> tokens) {
  Block& b = blocks_[static_cast<size_t>(block)];
  if (b.cached || tokens.empty() || static_cast<int32_t>(tokens.size()) >= block_size_) return;
  const uint64_t link = key(previous, generation_of(previous), {});
  const auto [first, last] = tails_.equal_range(link);
  for (auto it = first; it != last; ++it) {
    const Block& other = blocks_[static_cast<size_t>(it->second)];
    if (follows(other, previous) && other.tokens.size() >= tokens.size() &&
        std::equal(tokens.begin(), tokens.end(), other.tokens.begin())) {
      return;
    }
  }
  b.previous = previous;
  b.previous_generation = generation_of(previous);
  b.tokens.assign(tokens.begin(), tokens.end());
  b.cached = true;
  b.tail = true;
  tails_.emplace(link, block);
}

std::optional<KvBlockPool::Tail> KvBlockPool::find_tail(int32_t previous, std::span<const int32_t> rest) const {
  const auto [first, last] = tails_.equal_range(key(previous, generation_of(previous), {}));
  std::optional<Tail> best;
  for (auto it = first; it != last; ++it) {
    const Block& b = blocks_[static_cast<size_t>(it->second)];
    if (!follows(b, previous) || b.refs > 0) continue;
    const size_t n = std::min(b.tokens.size(), rest.size());
    const auto shared =
        static_cast<int32_t>(std::mismatch(rest.begin(), rest.begin() + n, b.tokens.begin()).first - rest.begin());
    if (shared > 0 && (!best || shared > best->n_tokens)) best = Tail{it->second, shared};
  }
  return best;
}

void KvBlockPool::take_tail(const Tail& tail) {
  Block& b = blocks_[static_cast<size_t>(tail.block)];
  GUFO_CHECK(b.tail && b.refs == 0);
  leave_lru(b);
  uncache(tail.block);
  ++b.generation;  // rewritten from here on, like a fresh block
  b.refs = 1;
}

std::optional<KvBlockPool::Tail> KvBlockPool::adopt_tail(int32_t previous, std::span<const int32_t> rest) {
  const std::optional<Tail> tail = find_tail(previous, rest);
  if (tail) take_tail(*tail);
  return tail;
}

void KvBlockPool::hold_tail(const Tail& tail) {
  Block& b = blocks_[static_cast<size_t>(tail.block)];
  GUFO_CHECK(b.tail && b.refs == 0);
  leave_lru(b);
  b.refs = 1;
}

int64_t KvBlockPool::forget(std::span<const int32_t> tokens, int64_t keep) {
  std::vector<int32_t> chain;
  int32_t previous = -1;
  size_t at = 0;
  for (; at + static_cast<size_t>(block_size_) <= tokens.size(); at += static_cast<size_t>(block_size_)) {
    const std::optional<int32_t> block = find(previous, tokens.subspan(at, static_cast<size_t>(block_size_)));
    if (!block) break;
    chain.push_back(*block);
    previous = *block;
  }
  int64_t dropped = 0;
  std::vector<int32_t> gone;  // dropped, in the order dropped
  const auto drop = [&](int32_t block) {
    // A running sequence's stays cached (and so does what it needs).
    if (blocks_[static_cast<size_t>(block)].refs > 0) return false;
    free_cached(block);
    gone.push_back(block);
    return true;
  };
  // Only a tail that is all this context's (another, which shares some tokens, is another's).
  const std::optional<Tail> tail = find_tail(previous, tokens.subspan(at));
  if (tail && static_cast<int64_t>(at) >= keep &&
      blocks_[static_cast<size_t>(tail->block)].tokens.size() == static_cast<size_t>(tail->n_tokens) &&
      drop(tail->block)) {
    dropped += tail->n_tokens;
  }
  // Last first: a block a sequence holds has its whole chain before it held too.
  for (size_t i = chain.size(); i-- > 0;) {
    if (static_cast<int64_t>(i) * block_size_ < keep) break;  // shared with another context
    if (drop(chain[i])) dropped += block_size_;
  }
  drop_followers(gone);
  return dropped;
}

void KvBlockPool::free_cached(int32_t block) {
  leave_lru(blocks_[static_cast<size_t>(block)]);
  uncache(block);
  free_.push_back(block);
}

void KvBlockPool::drop_followers(std::vector<int32_t> gone) {
  if (gone.empty()) return;
  // A dropped block keeps its generation until it is allocated again, so what followed it
  // still "follows" it: find those by their link (one pass over the pool), and drop them and
  // what followed them in turn.
  std::unordered_multimap<int32_t, int32_t> followers;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const Block& block = blocks_[b];
    if (block.cached && block.refs == 0 && block.previous >= 0)
      followers.emplace(block.previous, static_cast<int32_t>(b));
  }
  for (size_t next = 0; next < gone.size(); ++next) {
    const int32_t dropped = gone[next];
    const auto [first, last] = followers.equal_range(dropped);
    for (auto it = first; it != last; ++it) {
      Block& block = blocks_[static_cast<size_t>(it->second)];
      if (!block.cached || !follows(block, dropped)) continue;
      free_cached(it->second);
      gone.push_back(it->second);
    }
  }
}

}  // namespace gufo::engine
