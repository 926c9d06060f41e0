// Runs a per-row job over all rows of a tensor on std::threads: contiguous chunks handed out
// through an atomic counter, so every row is done exactly once whatever the thread count.
// Used by quantize_model.cpp and synth_model.cpp; tested through tests/unit/quantize.
#pragma once

#include <cstdint>
#include <functional>

#include "core/result.h"

namespace gufo::quantize {

// Rows [first_row, last_row) of one chunk; a thread may be given many chunks.
using RowRangeJob = std::function<Status(uint64_t first_row, uint64_t last_row)>;

// Calls `job` on chunks covering [0, n_rows) from up to `n_threads` threads (0: the
// machine's hardware_concurrency). Returns the first error any chunk returned; after an
// error, chunks not yet started are skipped.
Status for_each_row_chunk(uint64_t n_rows, unsigned n_threads, const RowRangeJob& job);

// n_threads, or hardware_concurrency when 0 (at least 1).
unsigned resolve_thread_count(unsigned n_threads);

}  // namespace gufo::quantize
