// A fixed pool of worker threads for the CPU backend's data-parallel loops. parallel_for
// splits [0, n) into contiguous chunks, runs them on the workers and the caller, and returns
// when all are done. Tested by tests/unit/backend/thread_pool_test.cpp.
//
// NOTE(thread_pool): a decode step is ~400 parallel_for calls of a few tens of microseconds
// each, so waking sleeping threads through the kernel each time (futex wake + reschedule)
// cost ~15% of decode time. Workers and the caller therefore spin on atomics for a short
// while (kSpinIterations pauses, ~0.1 ms; yielding now and then only when the pool has more
// threads than the machine) before sleeping on a condition variable, and the condition
// variables are only touched when someone actually sleeps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gufo::cpu {

class ThreadPool {
 public:
  // n_threads <= 0: one per hardware thread.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls body(begin, end) on disjoint chunks covering [0, n); chunks are at least `grain`.
  // Not reentrant: one parallel_for at a time, from one thread.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

 private:
  void worker_loop(int index);
  // Spins, then sleeps, until `ready()`; `sleepers` counts who sleeps on `cv`.
  template <class Ready>
  void wait_for(Ready ready, std::condition_variable& cv, std::atomic<int>& sleepers);
  // Wakes whoever sleeps on `cv` (cheap when nobody does).
  void wake(std::condition_variable& cv, const std::atomic<int>& sleepers);

  std::vector<std::thread> workers_;
  bool yield_while_spinning_ = false;  // more threads than hardware threads
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::atomic<int> work_sleepers_{0};
  std::atomic<int> done_sleepers_{0};
  // The current job; written before generation_ moves (release), read after (acquire).
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace gufo::cpu
