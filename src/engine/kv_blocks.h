// Block accounting for a paged KV cache, with a prefix cache on top: which of the pool's
// blocks are free, which are held by running sequences (reference counted, so several
// sequences can share the blocks of a common prefix), and which hold a finished sequence's
// full blocks that a later prompt with the same tokens may reuse (evicted least recently
// used first when the free list runs dry).
//
// A full block is known by its tokens and by the block before it (id and generation: a
// block id reused for other contents gets a new generation, so a stale chain never
// matches). Only full blocks are shared; a sequence always writes into blocks it alone
// holds. A finished sequence's last, partial block (its tail) is cached too, known the same
// way: a later prompt that continues the chain with some of the tail's tokens takes the block
// over (it leaves the cache and the newcomer writes past the tokens it shares), so a short
// prompt sent again evaluates one token, not all of them.
// Tested by tests/unit/engine/kv_blocks_test.cpp.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace gufo::engine {

class KvBlockPool {
 public:
  KvBlockPool(int32_t n_blocks, int32_t block_size);

  int32_t block_size() const { return block_size_; }
  int32_t n_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  // Blocks a new allocation could take: free ones plus cached ones nobody holds.
  int32_t n_available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  // Blocks held by at least one sequence.
  int32_t n_used() const { return n_blocks() - n_available(); }
  int32_t n_cached() const { return static_cast<int32_t>(by_key_.size() + tails_.size()); }

  // The longest run of cached full blocks that starts `tokens` and covers at most
  // `max_tokens` tokens; the caller now holds them (release them when done).
  std::vector<int32_t> acquire_prefix(std::span<const int32_t> tokens, int64_t max_tokens);
  // A block for the caller alone (free first, else the least recently used cached one,
  // which leaves the prefix cache); none when every block is held.
  std::optional<int32_t> allocate();
  // Drops the caller's hold on each block, last block first (so a chain's tail leaves the
  // cache before its head). Blocks nobody holds any more stay cached if they were
  // registered, else become free.
  void release(std::span<const int32_t> blocks);
  // Records that `block`, which follows `previous` (-1 for a sequence's first block), now
  // holds exactly `tokens` (block_size of them), so later prompts can reuse it. A block whose
  // contents are already cached under another id stays private. Returns the block cached for
  // them now (`block`, or that other one; -1 when neither is).
  int32_t register_full(int32_t block, int32_t previous, std::span<const int32_t> tokens);
  // Records that `block`, which follows `previous`, holds `tokens` (1 to block_size - 1 of
  // them) and its holder writes nothing more into it; it is cached from now on and, once
  // released, evictable. Skipped when a cached tail there already starts with the same tokens.
  void register_tail(int32_t block, int32_t previous, std::span<const int32_t> tokens);
  struct Tail {
    int32_t block;
    int32_t n_tokens;  // how many of `rest` it holds
  };
  // The cached, unheld tail after `previous` that shares the longest run (at least one
  // token) with the start of `rest`; it is one of the n_available() blocks.
  std::optional<Tail> find_tail(int32_t previous, std::span<const int32_t> rest) const;
  // The caller now holds `tail` (from find_tail, nothing changed since) alone: it has left
  // the cache.
  void take_tail(const Tail& tail);
  // find_tail, then take_tail.
  std::optional<Tail> adopt_tail(int32_t previous, std::span<const int32_t> rest);
  // The caller holds `tail` (from find_tail, nothing changed since) as it is, still cached: to
  // read it (release it when done).
  void hold_tail(const Tail& tail);
  // Drops what is cached of `tokens` past its first `keep` (which others share): the full
  // blocks of its chain and the tail that continues them with its tokens alone, where nobody
  // holds them, and then every cached block that followed a dropped one (nothing could reach
  // it any more). Dropped blocks become free. Returns the positions of `tokens` dropped.
  int64_t forget(std::span<const int32_t> tokens, int64_t keep = 0);

 private:
  struct Block {
    int32_t refs = 0;
    uint64_t generation = 0;
    bool cached = false;  // in by_key_, or in tails_ when `tail`
    bool tail = false;
    int32_t previous = -1;
    uint64_t previous_generation = 0;
    std::vector<int32_t> tokens;  // when cached
    std::list<int32_t>::iterator lru_at;
    bool in_lru = false;
  };
  uint64_t key(int32_t previous, uint64_t previous_generation, std::span<const int32_t> tokens) const;
  uint64_t generation_of(int32_t block) const;  // 0 for -1 (no block before)
  // Whether `b` was registered after `previous` as it is now (the same generation).
  bool follows(const Block& b, int32_t previous) const;
  std::optional<int32_t> find(int32_t previous, std::span<const int32_t> tokens) const;
  void uncache(int32_t block);
  void leave_lru(Block& b);         // held again, or dropped: no longer evictable
  void free_cached(int32_t block);  // an unheld cached block leaves the cache for the free list
  // Drops every cached, unheld block that follows one of `gone` (already dropped), and so on.
  void drop_followers(std::vector<int32_t> gone);

  int32_t block_size_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;
  std::list<int32_t> lru_;  // cached, unheld; front = least recently used
  std::unordered_multimap<uint64_t, int32_t> by_key_;
  std::unordered_multimap<uint64_t, int32_t> tails_;  // by the chain link alone
};

}  // namespace gufo::engine
