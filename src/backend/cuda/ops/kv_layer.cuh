// Where a position of a sequence lives in a layer of the paged KV cache (ops.h, KvLayer), for
// the kernels that read it (attention) and those that write it (kv_store, qk_norm_rope).
// Internal to backend/cuda/ops.
#pragma once

#include <cstdint>

#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {

// The pool row that holds `position` of sequence `seq` (its block table, then the offset).
__device__ inline int64_t cache_row(const KvLayer& kv, int32_t seq, int32_t position) {
  const int32_t* table = kv.tables + static_cast<int64_t>(seq) * kv.table_stride;
  const int32_t mask = (1 << kv.block_shift) - 1;
  return (static_cast<int64_t>(table[position >> kv.block_shift]) << kv.block_shift) | (position & mask);
}

}  // namespace gufo::cuda
