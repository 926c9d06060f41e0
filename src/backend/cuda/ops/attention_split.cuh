// What the two attention kernels (attention.cu: any layout and cache type; attention_mma.cu:
// tensor cores over an f16 cache) share: their arguments, the paged cache lookup, and, so that
// a row's floats do not depend on how its batch was split into blocks, the partials' layout,
// the split merge, and the merge kernel that runs after split-block launches. Internal to
// backend/cuda/ops.
#pragma once

#include <cstdint>

#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {

// A kernel's arguments (attention() in ops.h, plus where split blocks put their partials).
struct AttentionArgs {
  KvLayer kv;
  BatchRows batch;
  AttentionShape shape;
  const float* q;
  int64_t ldq;
  float* out;
  int64_t ldo;
  float* partials;  // split-block mode: [rows, n_head, max_splits, head_dim + 2], else null
  int64_t max_splits;
  int group;        // query heads per KV head
};

// The pool row that holds `position` of sequence `seq` (its block table, then the offset).
__device__ inline int64_t cache_row(const KvLayer& kv, int32_t seq, int32_t position) {
  const int32_t* table = kv.tables + static_cast<int64_t>(seq) * kv.table_stride;
  const int32_t mask = (1 << kv.block_shift) - 1;
  return (static_cast<int64_t>(table[position >> kv.block_shift]) << kv.block_shift) | (position & mask);
}

// Split-block mode keeps one partial per (row, head, split): [m, l, o[0..head_dim)].
__host__ __device__ inline int64_t partial_offset(int64_t row, int64_t head, int64_t split, int64_t n_head,
                                                  int64_t max_splits, int64_t head_dim) {
  return ((row * n_head + head) * max_splits + split) * (head_dim + 2);
}

// The weights (a, b) that merge a finished split (m, l) into a running total (total_m,
// total_l), which it updates; each output dim then becomes o_total * a + o * b. The splits of
// a row merge in ascending order, from total_m = -inf, total_l = 0.
__device__ inline void merge_weights(float& total_m, float& total_l, float m, float l, float& a, float& b) {
  const float m_new = fmaxf(total_m, m);
  a = expf(total_m - m_new);
  b = expf(m - m_new);
  total_l = total_l * a + l * b;
  total_m = m_new;
}

// Split-block mode, second step: merges every row's splits in order (from `partials`) and
// writes out [rows, n_head * head_dim] (padding rows were zeroed by the attention kernel).
Status merge_splits(const BatchRows& batch, const AttentionShape& shape, const float* partials, int64_t max_splits,
                    float* out, int64_t ldo, gpu::stream_t stream);

}  // namespace gufo::cuda
