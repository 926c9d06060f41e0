// for_each_row_chunk (see parallel_rows.h). Tested through tests/unit/quantize.
#include "quantize/parallel_rows.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace gufo::quantize {

unsigned resolve_thread_count(unsigned n_threads) {
  if (n_threads != 0) return n_threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

Status for_each_row_chunk(uint64_t n_rows, unsigned n_threads, const RowRangeJob& job) {
  if (n_rows == 0) return ok_status();
  const uint64_t n_workers = std::min<uint64_t>(resolve_thread_count(n_threads), n_rows);
  // NOTE(quantize): ~8 chunks per thread balances uneven rows without much counter traffic.
  const uint64_t chunk_rows = std::max<uint64_t>(1, n_rows / (n_workers * 8));
  const uint64_t n_chunks = (n_rows + chunk_rows - 1) / chunk_rows;
  std::atomic<uint64_t> next_chunk{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::optional<Error> first_error;

  const auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      const uint64_t chunk = next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (chunk >= n_chunks) return;
      const uint64_t first_row = chunk * chunk_rows;
      const uint64_t last_row = std::min(n_rows, first_row + chunk_rows);
      Status status = job(first_row, last_row);
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = status.error();
        failed.store(true, std::memory_order_relaxed);
        return;
      }
    }
  };
  if (n_workers == 1) {
    work();
  } else {
    std::vector<std::thread> threads;
    threads.reserve(n_workers - 1);
    for (uint64_t worker = 1; worker < n_workers; ++worker) threads.emplace_back(work);
    work();
    for (std::thread& thread : threads) thread.join();
  }
  if (first_error) return *first_error;
  return ok_status();
}

}  // namespace gufo::quantize
