// KvBlockPool: allocation until the pool is empty, prefix matches over full blocks only and
// never past max_tokens, reuse after release, least-recently-used eviction (tail of a chain
// before its head), no stale match through a block id that was reused, and partial last
// blocks (tails) taken over by a prompt that continues their chain; forgetting a context
// (a slot's erase) drops its unheld blocks and nothing of another's.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/kv_blocks.h"

namespace gufo::engine {
namespace {

std::vector<int32_t> iota_tokens(int32_t n, int32_t first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// A sequence that took `n` fresh blocks for `tokens` and registered its full ones.
std::vector<int32_t> fill(KvBlockPool& pool, const std::vector<int32_t>& tokens) {
  std::vector<int32_t> blocks;
  const int32_t b = pool.block_size();
  for (size_t at = 0; at < tokens.size(); at += static_cast<size_t>(b)) blocks.push_back(*pool.allocate());
  for (size_t i = 0; (i + 1) * static_cast<size_t>(b) <= tokens.size(); ++i) {
    pool.register_full(blocks[i], i > 0 ? blocks[i - 1] : -1,
                       std::span<const int32_t>(tokens).subspan(i * static_cast<size_t>(b), static_cast<size_t>(b)));
  }
  return blocks;
}

TEST(KvBlockPool, AllocatesEveryBlockOnceThenNone) {
  KvBlockPool pool(4, 16);
  std::vector<int32_t> got;
  for (int i = 0; i < 4; ++i) got.push_back(*pool.allocate());
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_EQ(pool.n_used(), 4);
  pool.release(std::vector<int32_t>{2});
  EXPECT_EQ(pool.n_available(), 1);
  EXPECT_EQ(*pool.allocate(), 2);
}

TEST(KvBlockPool, PrefixMatchesFullBlocksOnlyAndStopsAtMaxTokens) {
  KvBlockPool pool(8, 4);
  const std::vector<int32_t> tokens = iota_tokens(10);  // blocks: [0..4) [4..8) and a partial one
  const std::vector<int32_t> blocks = fill(pool, tokens);
  pool.release(blocks);
  EXPECT_EQ(pool.n_cached(), 2);

  std::vector<int32_t> held = pool.acquire_prefix(tokens, 9);
  EXPECT_EQ(held, (std::vector<int32_t>{blocks[0], blocks[1]}));
  pool.release(held);
  // max_tokens 7 leaves room for one full block only.
  held = pool.acquire_prefix(tokens, 7);
  EXPECT_EQ(held, (std::vector<int32_t>{blocks[0]}));
  pool.release(held);
  // A prompt that differs inside the second block shares only the first.
  std::vector<int32_t> other = tokens;
  other[5] = 7;
  held = pool.acquire_prefix(other, 9);
  EXPECT_EQ(held, (std::vector<int32_t>{blocks[0]}));
  pool.release(held);
  // The same second block after a different first block is another prefix: no match at all.
  std::vector<int32_t> shifted = tokens;
  shifted[0] = 1;
  EXPECT_TRUE(pool.acquire_prefix(shifted, 9).empty());
}

TEST(KvBlockPool, HeldBlocksAreNotEvictedAndSharedBlocksCountOnce) {
  KvBlockPool pool(3, 2);
  const std::vector<int32_t> tokens = iota_tokens(4);
  const std::vector<int32_t> a = fill(pool, tokens);                   // blocks 0, 1
  const std::vector<int32_t> shared = pool.acquire_prefix(tokens, 3);  // block 0 again
  ASSERT_EQ(shared, (std::vector<int32_t>{a[0]}));
  pool.release(a);  // block 0 still held by the second sequence; block 1 cached
  EXPECT_EQ(pool.n_used(), 1);
  EXPECT_EQ(*pool.allocate(), 2);             // the free block first
  EXPECT_EQ(*pool.allocate(), a[1]);          // then the cached, unheld one
  EXPECT_FALSE(pool.allocate().has_value());  // block 0 is held
  pool.release(shared);
  EXPECT_EQ(pool.n_available(), 1);
}

TEST(KvBlockPool, EvictsLeastRecentlyUsedTailFirst) {
  KvBlockPool pool(4, 2);
  const std::vector<int32_t> first = iota_tokens(4, 0);
  const std::vector<int32_t> second = iota_tokens(4, 50);
  const std::vector<int32_t> a = fill(pool, first);
  const std::vector<int32_t> b = fill(pool, second);
  pool.release(a);
  pool.release(b);
  // The oldest chain goes first, its tail before its head.
  EXPECT_EQ(*pool.allocate(), a[1]);
  std::vector<int32_t> held = pool.acquire_prefix(first, 3);
  EXPECT_EQ(held, (std::vector<int32_t>{a[0]}));
  pool.release(held);  // a[0] is now the most recently used
  EXPECT_EQ(*pool.allocate(), b[1]);
  EXPECT_EQ(*pool.allocate(), b[0]);
  EXPECT_EQ(*pool.allocate(), a[0]);
  EXPECT_EQ(pool.n_cached(), 0);
}

TEST(KvBlockPool, ReusedBlockIdNeverMatchesAStaleChain) {
  KvBlockPool pool(3, 2);
  const std::vector<int32_t> tokens = iota_tokens(4, 0);
  const int32_t head = *pool.allocate();
  const int32_t tail = *pool.allocate();
  pool.register_full(head, -1, std::span<const int32_t>(tokens).subspan(0, 2));
  pool.register_full(tail, head, std::span<const int32_t>(tokens).subspan(2, 2));
  // Released head first, so the head is evicted while its old tail stays cached.
  pool.release(std::vector<int32_t>{head});
  pool.release(std::vector<int32_t>{tail});
  ASSERT_EQ(*pool.allocate(), 2);     // the free block
  ASSERT_EQ(*pool.allocate(), head);  // then the least recently used: the head, rewritten now
  pool.register_full(head, -1, std::span<const int32_t>(tokens).subspan(0, 2));
  pool.release(std::vector<int32_t>{head});
  // The head matches (registered again); the tail, computed after the old head, must not.
  const std::vector<int32_t> held = pool.acquire_prefix(tokens, 4);
  EXPECT_EQ(held, (std::vector<int32_t>{head}));
  pool.release(held);
}

TEST(KvBlockPool, ATailIsTakenOverByAPromptThatContinuesItsChain) {
  KvBlockPool pool(4, 4);
  const std::vector<int32_t> tokens = iota_tokens(6);  // a full block, then a tail of two
  const std::vector<int32_t> blocks = fill(pool, tokens);
  pool.register_tail(blocks[1], blocks[0], std::span<const int32_t>(tokens).subspan(4, 2));
  pool.release(blocks);
  EXPECT_EQ(pool.n_cached(), 2);
  EXPECT_EQ(pool.n_available(), 4);  // a cached tail is evictable like any cached block

  // The same prompt again, its last token left to evaluate: the full block, then one of the
  // tail's two tokens.
  const std::vector<int32_t> held = pool.acquire_prefix(tokens, 5);
  ASSERT_EQ(held, (std::vector<int32_t>{blocks[0]}));
  const std::optional<KvBlockPool::Tail> tail =
      pool.adopt_tail(blocks[0], std::span<const int32_t>(tokens).subspan(4, 1));
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->block, blocks[1]);
  EXPECT_EQ(tail->n_tokens, 1);
  // It left the cache and is the caller's alone: nobody else can take it or allocate it.
  EXPECT_EQ(pool.n_cached(), 1);
  EXPECT_FALSE(pool.adopt_tail(blocks[0], std::span<const int32_t>(tokens).subspan(4, 2)).has_value());
  EXPECT_EQ(pool.n_available(), 2);
  pool.release(std::vector<int32_t>{blocks[0], tail->block});
  EXPECT_EQ(pool.n_available(), 4);
  EXPECT_EQ(pool.n_cached(), 1);  // released unregistered: free, not cached
}

TEST(KvBlockPool, TheLongestMatchingTailOnTheSameLinkWins) {
  KvBlockPool pool(6, 4);
  const std::vector<int32_t> a = {1, 2, 3}, b = {1, 2, 9}, shorter = {1, 2};
  const int32_t ta = *pool.allocate(), tb = *pool.allocate(), ts = *pool.allocate();
  pool.register_tail(ta, -1, a);
  pool.register_tail(tb, -1, b);
  pool.register_tail(ts, -1, shorter);  // skipped: `a` already starts with it
  pool.release(std::vector<int32_t>{ta, tb, ts});
  EXPECT_EQ(pool.n_cached(), 2);
  const std::vector<int32_t> prompt = {1, 2, 9, 4};
  const std::optional<KvBlockPool::Tail> got = pool.adopt_tail(-1, prompt);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->block, tb);
  EXPECT_EQ(got->n_tokens, 3);
  // A first token that differs matches nothing; another link matches nothing.
  EXPECT_FALSE(pool.adopt_tail(-1, std::vector<int32_t>{7, 2, 3}).has_value());
  EXPECT_FALSE(pool.adopt_tail(ta, a).has_value());
  // Full blocks and tails are told apart: a tail never answers a full-block lookup.
  EXPECT_TRUE(pool.acquire_prefix(std::vector<int32_t>{1, 2, 3, 4, 5}, 5).empty());
}

TEST(KvBlockPool, ATailAfterAReusedBlockIdNeverMatches) {
  KvBlockPool pool(2, 2);
  const std::vector<int32_t> tokens = {5, 6, 7};
  const int32_t head = *pool.allocate();
  const int32_t tail = *pool.allocate();
  pool.register_full(head, -1, std::span<const int32_t>(tokens).subspan(0, 2));
  pool.register_tail(tail, head, std::span<const int32_t>(tokens).subspan(2, 1));
  pool.release(std::vector<int32_t>{head});
  pool.release(std::vector<int32_t>{tail});
  ASSERT_EQ(*pool.allocate(), head);  // evicted, then rewritten with the same tokens
  pool.register_full(head, -1, std::span<const int32_t>(tokens).subspan(0, 2));
  pool.release(std::vector<int32_t>{head});
  const std::vector<int32_t> held = pool.acquire_prefix(tokens, 3);
  ASSERT_EQ(held, (std::vector<int32_t>{head}));
  EXPECT_FALSE(pool.adopt_tail(head, std::span<const int32_t>(tokens).subspan(2, 1)).has_value());
  pool.release(held);
}

TEST(KvBlockPool, AnAllocationEvictsATailLikeAnyCachedBlock) {
  KvBlockPool pool(2, 4);
  const std::vector<int32_t> tokens = {1, 2, 3};
  const int32_t tail = *pool.allocate();
  pool.register_tail(tail, -1, tokens);
  EXPECT_EQ(pool.n_cached(), 1);
  pool.release(std::vector<int32_t>{tail});
  ASSERT_EQ(*pool.allocate(), 1);     // the free block first
  ASSERT_EQ(*pool.allocate(), tail);  // then the cached tail, which leaves the cache
  EXPECT_EQ(pool.n_cached(), 0);
  EXPECT_FALSE(pool.adopt_tail(-1, tokens).has_value());
  // Written again and registered anew, it matches again.
  pool.register_tail(tail, -1, tokens);
  pool.release(std::vector<int32_t>{tail});
  const std::optional<KvBlockPool::Tail> got = pool.adopt_tail(-1, tokens);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->n_tokens, 3);
}

TEST(KvBlockPool, ForgetDropsAContextsOwnBlocksAndWhatOnlyTheyLedTo) {
  KvBlockPool pool(10, 4);
  const std::vector<int32_t> tokens = iota_tokens(14);  // three full blocks and a tail of 2
  const std::vector<int32_t> ours = fill(pool, tokens);
  pool.register_tail(ours[3], ours[2], std::span<const int32_t>(tokens).subspan(12, 2));
  pool.release(ours);
  // Another context shares the first two blocks, then has a block and a tail of its own.
  std::vector<int32_t> theirs(tokens.begin(), tokens.begin() + 8);
  for (int32_t t : {500, 501, 502, 503, 600, 601}) theirs.push_back(t);
  std::vector<int32_t> held = pool.acquire_prefix(theirs, 8);
  ASSERT_EQ(held.size(), 2u);
  held.push_back(*pool.allocate());
  held.push_back(*pool.allocate());
  pool.register_full(held[2], held[1], std::span<const int32_t>(theirs).subspan(8, 4));
  pool.register_tail(held[3], held[2], std::span<const int32_t>(theirs).subspan(12, 2));
  // And a third context's tail after our third block, which shares one token with our tail.
  const int32_t after_ours = *pool.allocate();
  pool.register_tail(after_ours, ours[2], std::vector<int32_t>{112, 999, 5});
  pool.release(std::vector<int32_t>{after_ours});
  pool.release(held);
  ASSERT_EQ(pool.n_cached(), 7);

  // The first 8 tokens are shared: our third block and our tail go, and the tail that only our
  // third block led to; the other context keeps all of its chain.
  EXPECT_EQ(pool.forget(tokens, 8), 4 + 2);
  EXPECT_EQ(pool.n_cached(), 4);
  const std::vector<int32_t> kept = pool.acquire_prefix(theirs, 12);
  EXPECT_EQ(kept.size(), 3u);
  EXPECT_EQ(pool.n_available(), 10 - 3);
  pool.release(kept);

  // A block a sequence holds stays cached, and so do the blocks before it.
  std::vector<int32_t> first = pool.acquire_prefix(tokens, 4);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(pool.forget(theirs), 2 + 4 + 4);
  EXPECT_EQ(pool.n_cached(), 1);
  pool.release(first);
  EXPECT_EQ(pool.forget(tokens), 4);
  EXPECT_EQ(pool.n_cached(), 0);
  EXPECT_EQ(pool.n_available(), 10);
  EXPECT_EQ(pool.forget(tokens), 0);
}

TEST(KvBlockPool, RegisteringContentsCachedElsewhereNamesTheCachedBlock) {
  KvBlockPool pool(6, 4);
  const std::vector<int32_t> tokens = iota_tokens(8);
  const std::vector<int32_t> first = fill(pool, tokens);
  const int32_t copy = *pool.allocate();
  EXPECT_EQ(pool.register_full(copy, -1, std::span<const int32_t>(tokens).first(4)), first[0]);
  EXPECT_EQ(pool.register_full(first[1], first[0], std::span<const int32_t>(tokens).subspan(4, 4)), first[1]);
  EXPECT_EQ(pool.register_full(copy, -1, std::vector<int32_t>{1, 2}), -1);  // not a full block
  pool.release(std::vector<int32_t>{copy});
  EXPECT_EQ(pool.n_cached(), 2);  // the copy stayed private, and is free again
}

TEST(KvBlockPool, AHeldTailStaysCachedAndFindable) {
  KvBlockPool pool(4, 4);
  const std::vector<int32_t> tokens = iota_tokens(6);
  std::vector<int32_t> blocks = fill(pool, tokens);
  pool.register_tail(blocks[1], blocks[0], std::span<const int32_t>(tokens).subspan(4, 2));
  pool.release(blocks);
  const std::optional<KvBlockPool::Tail> tail = pool.find_tail(blocks[0], std::span<const int32_t>(tokens).subspan(4));
  ASSERT_TRUE(tail.has_value());
  pool.hold_tail(*tail);
  EXPECT_EQ(pool.n_available(), 3);
  EXPECT_EQ(pool.n_cached(), 2);
  pool.release(std::vector<int32_t>{tail->block});
  EXPECT_EQ(pool.n_available(), 4);
  EXPECT_TRUE(pool.find_tail(blocks[0], std::span<const int32_t>(tokens).subspan(4)).has_value());
}

}  // namespace
}  // namespace gufo::engine
