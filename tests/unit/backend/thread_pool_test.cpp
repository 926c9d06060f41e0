// ThreadPool: every index is visited exactly once whatever n, grain and thread count; many
// back-to-back calls (the spinning path) and calls after idle pauses (the sleeping path) all
// complete; chunks respect the grain; the pool shuts down cleanly whether idle or asleep.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "backend/cpu/thread_pool.h"

namespace gufo::cpu {
namespace {

void expect_each_index_once(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int64_t> smallest_chunk{n};
  std::atomic<int> chunks{0};
  pool.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    ASSERT_LT(begin, end);
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    int64_t seen = smallest_chunk.load();
    while (end - begin < seen && !smallest_chunk.compare_exchange_weak(seen, end - begin)) {
    }
    chunks.fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n=" << n << " i=" << i;
  EXPECT_LE(chunks.load(), pool.n_threads());
  if (chunks.load() > 1) {
    EXPECT_GE(smallest_chunk.load() * 2, std::min<int64_t>(grain, n)) << "n=" << n;
  }
}

TEST(ThreadPool, EveryIndexOnceForAnyShape) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.n_threads(), threads);
    for (int64_t n : {1, 2, 3, 7, 16, 17, 100, 1000}) {
      for (int64_t grain : {1, 4, 16, 1000}) expect_each_index_once(pool, n, grain);
    }
    pool.parallel_for(0, 1, [](int64_t, int64_t) { FAIL() << "n = 0 must not call the body"; });
  }
}

TEST(ThreadPool, ManyBackToBackCalls) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  for (int call = 0; call < 20000; ++call) {
    pool.parallel_for(6, 1, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
  }
  EXPECT_EQ(total.load(), 6 * 20000);
}

TEST(ThreadPool, WakesAfterIdlePauses) {
  ThreadPool pool(2);
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // long enough for workers to sleep
    expect_each_index_once(pool, 64, 1);
  }
}

// A pool is destroyed right after work (its workers still spinning) or after they went to
// sleep: the work handed out is all done, and a destructor that does not stop and join its
// workers hangs the test (ctest's timeout fails it) or aborts it (a joinable std::thread).
TEST(ThreadPool, ShutsDownIdleOrAsleep) {
  std::atomic<int64_t> done{0};
  {
    ThreadPool busy(4);
    busy.parallel_for(100, 1, [&](int64_t begin, int64_t end) { done.fetch_add(end - begin); });
  }
  EXPECT_EQ(done.load(), 100);
  {
    ThreadPool asleep(4);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    asleep.parallel_for(10, 1, [&](int64_t begin, int64_t end) { done.fetch_add(end - begin); });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  EXPECT_EQ(done.load(), 110);
}

}  // namespace
}  // namespace gufo::cpu
