// ThreadPool (see thread_pool.h): workers wait for a generation counter to move, run their
// chunk, and the last one to finish releases the caller. Waiting spins first, then sleeps.
#include "backend/cpu/thread_pool.h"

#include <algorithm>

namespace gufo::cpu {

namespace {

constexpr int kSpinIterations = 20000;
// NOTE(thread_pool): with more threads than hardware threads, a spinner yields its core now
// and then, so that the thread that holds the work still gets to run. Otherwise it does not:
// on a machine shared with other processes, each yield handed the core to one of them for a
// time slice, and the next parallel_for then waited for this thread to come back (decode of
// qwen3 1.7B q4_k_m at nice -20 beside two compiler jobs: 17.4 / 24.3 / 26.5 t/s yielding,
// 24.6 / 31.8 / 28.5 not).
constexpr int kYieldEvery = 64;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  const int hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (n_threads <= 0) n_threads = hardware_threads;
  yield_while_spinning_ = n_threads > hardware_threads;
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  work_cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

template <class Ready>
void ThreadPool::wait_for(Ready ready, std::condition_variable& cv, std::atomic<int>& sleepers) {
  for (int i = 1; i <= kSpinIterations; ++i) {
    if (ready()) return;
    if (yield_while_spinning_ && i % kYieldEvery == 0) {
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  // NOTE(thread_pool): the sleeper count is raised under the lock and before the predicate is
  // checked; a waker changes the state first (seq_cst) and reads the count after, so either
  // the predicate sees the change or the waker sees the sleeper, takes the lock (which it can
  // only get once the sleeper waits) and notifies: no lost wake-up.
  sleepers.fetch_add(1);
  cv.wait(lock, ready);
  sleepers.fetch_sub(1);
}

void ThreadPool::wake(std::condition_variable& cv, const std::atomic<int>& sleepers) {
  if (sleepers.load() == 0) return;
  { std::lock_guard<std::mutex> lock(mutex_); }
  cv.notify_all();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    wait_for([&] { return stop_.load() || generation_.load() != seen; }, work_cv_, work_sleepers_);
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    const int64_t begin = std::min(n_, chunk_ * index);
    const int64_t end = std::min(n_, begin + chunk_);
    if (begin < end) (*body_)(begin, end);
    if (pending_.fetch_sub(1) == 1) wake(done_cv_, done_sleepers_);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  if (workers_.empty() || max_chunks == 1) {
    body(0, n);
    return;
  }
  const int64_t n_chunks = std::min<int64_t>(n_threads(), max_chunks);
  body_ = &body;
  n_ = n;
  chunk_ = (n + n_chunks - 1) / n_chunks;
  pending_.store(static_cast<int>(workers_.size()));
  generation_.fetch_add(1);  // seq_cst: publishes the job, and orders before wake()'s read
  wake(work_cv_, work_sleepers_);
  body(0, std::min(n, chunk_));  // the caller takes chunk 0
  wait_for([&] { return pending_.load() == 0; }, done_cv_, done_sleepers_);
  body_ = nullptr;
}

}  // namespace gufo::cpu
