// What the two attention kernels (attention.cu: any layout and cache type; attention_mma.cu:
// tensor cores over an f16 cache) share: their arguments, the paged cache lookup, and, so that
// a row's floats do not depend on how its batch was split into blocks, the partials' layout,
// the split merge, and the merge kernel that runs after split-block launches. Internal to
// backend/cuda/ops.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/ops/kv_layer.cuh"
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
  int32_t* tickets;  // split-block mode of attention_mma: [rows, n_head_kv], zero between launches
  int group;         // query heads per KV head
};

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

// Merges the splits 0..n_splits-1 of one (row, head), whose partials lie `stride` floats apart
// from `first`, in order, and writes out[d] = o[d] / l for this lane's dims d = lane + 32 j
// (j < kDims). One lane group. The partials of kChunk splits are loaded before any of them is
// merged (they do not depend on each other), so a long context costs n_splits / kChunk trips
// to memory rather than n_splits. They are read past L1 (another block of the same kernel may
// have written them).
template <int kDims>
__device__ inline void merge_partials(const float* first, int64_t stride, int64_t n_splits, int64_t hd, int lane,
                                      float* out) {
  constexpr int kChunk = 4;
  float total_m = -INFINITY, total_l = 0.0f, total_o[kDims];
#pragma unroll
  for (int j = 0; j < kDims; ++j) total_o[j] = 0.0f;
  for (int64_t s0 = 0; s0 < n_splits; s0 += kChunk) {
    float m[kChunk], l[kChunk], o[kChunk][kDims];
#pragma unroll
    for (int c = 0; c < kChunk; ++c) {
      const bool live = s0 + c < n_splits;
      const float* partial = first + (live ? s0 + c : 0) * stride;
      m[c] = live ? gpu::load_past_l1(partial) : 0.0f;
      l[c] = live ? gpu::load_past_l1(partial + 1) : 0.0f;
#pragma unroll
      for (int j = 0; j < kDims; ++j)
        o[c][j] = live && lane + 32 * j < hd ? gpu::load_past_l1(partial + 2 + lane + 32 * j) : 0.0f;
    }
#pragma unroll
    for (int c = 0; c < kChunk; ++c) {
      if (s0 + c >= n_splits) break;
      float a, b;
      merge_weights(total_m, total_l, m[c], l[c], a, b);
#pragma unroll
      for (int j = 0; j < kDims; ++j) total_o[j] = total_o[j] * a + o[c][j] * b;
    }
  }
#pragma unroll
  for (int j = 0; j < kDims; ++j) {
    if (lane + 32 * j < hd) out[lane + 32 * j] = total_o[j] / total_l;
  }
}

// Split-block mode, second step: merges every row's splits in order (from `partials`) and
// writes out [rows, n_head * head_dim] (padding rows were zeroed by the attention kernel).
Status merge_splits(const BatchRows& batch, const AttentionShape& shape, const float* partials, int64_t max_splits,
                    float* out, int64_t ldo, gpu::stream_t stream);

}  // namespace gufo::cuda
