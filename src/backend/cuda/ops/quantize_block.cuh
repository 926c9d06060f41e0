// One block of activation quantization (quantize_act.cu), shared with the fused norms
// (fused_runs.cu) so that both write the same quants: the CPU's quantize_activation_q8_0 /
// _q8_k (backend/cpu/quant/dot_scalar.cpp) with the same float operations.
#pragma once

#include <cstdint>

#include "backend/cuda/compat.cuh"
#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {

// Rounds to the nearest integer in [-127, 127], halves away from zero; NaN becomes 0.
__device__ inline int8_t to_q8(float v) {
  if (!(v == v)) return 0;
  const float clamped = fminf(127.0f, fmaxf(-127.0f, v));
  return static_cast<int8_t>(lroundf(clamped));
}

// Run `run` (of 32 quants) of row `row`: its sum into out.sum32 and, split, into out.sum_parts.
__device__ inline void store_sum32(const QuantActs& out, int64_t row, int64_t run, int sum) {
  out.sum32[row * (out.k / 32) + run] = sum;
  if (out.sum_parts != nullptr) {
    int8_t* parts = out.sum_parts + row * (out.k / 16) + (run / 8) * 16 + run % 8;
    parts[0] = static_cast<int8_t>(sum & 127);
    parts[8] = static_cast<int8_t>(sum >> 7);
  }
}

// A block's scale d and the factor its values are multiplied by before rounding, from its
// largest magnitude (quantize_activation_q8_0 / _q8_k's operations).
struct Q8Scale {
  float d;
  float inv_d;
};
__device__ inline Q8Scale q8_scale(float amax) {
  const float d = amax / 127.0f;
  return {d, d != 0.0f ? 127.0f / amax : 0.0f};
}

// Block `index` (kBlock = 32 or 256 values) of row `row` into `out`, by the group_lanes lanes
// of one group: lane l holds the kBlock / 32 consecutive values from index * kBlock + l *
// kBlock / 32 on.
template <int kBlock>
__device__ inline void quantize_block_values(const float (&values)[kBlock / 32], int64_t row, int64_t index, int lane,
                                             const QuantActs& out) {
  constexpr int kPerLane = kBlock / 32;
  const int64_t first = index * kBlock + lane * kPerLane;
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) amax = fmaxf(amax, fabsf(values[i]));
  amax = gpu::group_max(amax);
  const auto [d, inv_d] = q8_scale(amax);
  int sum = 0;
  int8_t* qs = out.qs + row * out.k + first;
  if constexpr (kPerLane == 8) {
    // One 8-byte store a lane where there were eight 1-byte ones, 8 bytes apart across the warp.
    uint32_t word[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int8_t q = to_q8(values[i] * inv_d);
      word[i / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(q)) << (8 * (i % 4));
      sum += q;
    }
    if ((reinterpret_cast<uintptr_t>(qs) & 7) == 0) {
      *reinterpret_cast<uint2*>(qs) = make_uint2(word[0], word[1]);
    } else {
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) qs[i] = static_cast<int8_t>(word[i / 4] >> (8 * (i % 4)));
    }
  } else {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int8_t q = to_q8(values[i] * inv_d);
      qs[i] = q;
      sum += q;
    }
  }
  if (lane == 0) out.d[row * (out.k / kBlock) + index] = d;
  if (out.sum32 != nullptr) {
    // Sum of each 32 quants: 32 / kPerLane lanes hold one 32-run.
    constexpr int kLanesPer32 = 32 / kPerLane;
#pragma unroll
    for (int mask = 1; mask < kLanesPer32; mask *= 2) sum += gpu::shfl_xor(sum, mask);
    if (lane % kLanesPer32 == 0) store_sum32(out, row, first / 32, sum);
  }
}

// The same, the values read from row `row` of x (row stride ldx).
template <int kBlock>
__device__ inline void quantize_block(const float* x, int64_t ldx, int64_t row, int64_t index, int lane,
                                      const QuantActs& out) {
  constexpr int kPerLane = kBlock / 32;
  const int64_t first = index * kBlock + lane * kPerLane;
  float values[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) values[i] = x[row * ldx + first + i];
  quantize_block_values<kBlock>(values, row, index, lane, out);
}

}  // namespace gufo::cuda
