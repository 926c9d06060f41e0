// Where a position of a sequence lives in a layer of the paged KV cache (ops.h, KvLayer), for
// the kernels that read it (attention) and those that write it (kv_store, qk_norm_rope), and
// how a value is stored there.
// Internal to backend/cuda/ops.
#pragma once

#include <cstdint>

#include "backend/cuda/ops/ops.h"
#include "quant/half.h"

namespace gufo::cuda {

// The pool row that holds `position` of sequence `seq` (its block table, then the offset).
__device__ inline int64_t cache_row(const KvLayer& kv, int32_t seq, int32_t position) {
  const int32_t* table = kv.tables + static_cast<int64_t>(seq) * kv.table_stride;
  const int32_t mask = (1 << kv.block_shift) - 1;
  return (static_cast<int64_t>(table[position >> kv.block_shift]) << kv.block_shift) | (position & mask);
}

// Writes one value at element `index` of a cache pool (kv.k or kv.v), converted as the CPU
// converts it (quant/half.h) for an f16 cache.
__device__ inline void store_kv(const KvLayer& kv, void* pool, int64_t index, float value) {
  if (kv.f16) {
    static_cast<uint16_t*>(pool)[index] = quant::fp32_to_fp16(value);
  } else {
    static_cast<float*>(pool)[index] = value;
  }
}

}  // namespace gufo::cuda
