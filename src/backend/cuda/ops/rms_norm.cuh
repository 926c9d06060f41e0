// The pieces of rms_norm (row_ops.cu) that the fused kernels (fused_runs.cu) repeat: one
// source, so a fused norm gives the bits of the plain one.
// kThreads threads per normalized segment (a lane group for a head's 128 values, a block
// for a 4096-wide row): thread i sums the squares of its float4 pieces i, i + kThreads, ...
// in order, then a fixed tree adds the threads' sums (butterfly in each group, groups in
// order), so every segment is summed in one order whatever the batch. The loads of a thread
// are independent, so a wide row is read with all of them in flight rather than one by one.
#pragma once

#include <cstdint>

#include "backend/cuda/compat.cuh"

namespace gufo::cuda {

// The segment's sum of its threads' partial sums by the fixed tree: a butterfly in each lane
// group, then the groups in order (through group_sums, with a barrier, when kThreads spans
// several groups).
template <int kThreads>
__device__ inline float segment_total(float sum_sq, float* group_sums) {
  constexpr int kGroups = kThreads / gpu::group_lanes;
  sum_sq = gpu::group_sum(sum_sq);
  if constexpr (kGroups > 1) {
    const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
    const int g = static_cast<int>(threadIdx.x / gpu::group_lanes);
    if (lane == 0) group_sums[g] = sum_sq;
    __syncthreads();
    sum_sq = 0.0f;
#pragma unroll
    for (int j = 0; j < kGroups; ++j) sum_sq += group_sums[j];
  }
  return sum_sq;
}

// A float4 piece's squares, summed as segment_sum_squares sums them.
__device__ inline float piece_squares(float4 v) { return v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w; }

// A thread's float4 piece's squares, added to its running sum as segment_sum_squares adds them.
__device__ inline float add_squares(float sum_sq, float4 v) { return sum_sq + piece_squares(v); }

// Every thread of the block calls this (it may synchronize the block when kThreads spans
// several lane groups); threads of a dead segment pass pieces = 0. group_sums: shared memory
// of 256 / group_lanes floats.
template <int kThreads, bool kVec4>
__device__ inline float segment_sum_squares(const float* in, int64_t pieces, float* group_sums) {
  const int tid = static_cast<int>(threadIdx.x % kThreads);
  float sum_sq = 0.0f;
  for (int64_t i = tid; i < pieces; i += kThreads) {
    if constexpr (kVec4) {
      sum_sq = add_squares(sum_sq, reinterpret_cast<const float4*>(in)[i]);
    } else {
      sum_sq += in[i] * in[i];
    }
  }
  return segment_total<kThreads>(sum_sq, group_sums);
}

__device__ inline float rms_scale(float sum_sq, int64_t group, float eps) {
  return 1.0f / sqrtf(sum_sq / static_cast<float>(group) + eps);
}

// out = in * inv_rms * w over the segment's pieces (thread i: pieces i, i + kThreads, ...).
template <int kThreads, bool kVec4>
__device__ inline void scale_segment(const float* in, int64_t pieces, const float* w, float inv_rms, float* out) {
  const int tid = static_cast<int>(threadIdx.x % kThreads);
  for (int64_t i = tid; i < pieces; i += kThreads) {
    if constexpr (kVec4) {
      const float4 v = reinterpret_cast<const float4*>(in)[i];
      const float4 g = reinterpret_cast<const float4*>(w)[i];
      reinterpret_cast<float4*>(out)[i] =
          make_float4(v.x * inv_rms * g.x, v.y * inv_rms * g.y, v.z * inv_rms * g.z, v.w * inv_rms * g.w);
    } else {
      out[i] = in[i] * inv_rms * w[i];
    }
  }
}

}  // namespace gufo::cuda
