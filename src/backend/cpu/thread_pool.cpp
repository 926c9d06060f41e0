// ThreadPool (see thread_pool.h): workers wait for a generation counter to move, run their
// chunk, and the last one to finish wakes the caller.
#include "backend/cpu/thread_pool.h"

#include <algorithm>

namespace gufo::cpu {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* body = nullptr;
    int64_t begin = 0, end = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      body = body_;
      begin = std::min(n_, chunk_ * index);
      end = std::min(n_, begin + chunk_);
    }
    if (begin < end) (*body)(begin, end);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  if (workers_.empty() || max_chunks == 1) {
    body(0, n);
    return;
  }
  const int64_t n_chunks = std::min<int64_t>(n_threads(), max_chunks);
  const int64_t chunk = (n + n_chunks - 1) / n_chunks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    n_ = n;
    chunk_ = chunk;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  body(0, std::min(n, chunk));  // the caller takes chunk 0
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  body_ = nullptr;
}

}  // namespace gufo::cpu
