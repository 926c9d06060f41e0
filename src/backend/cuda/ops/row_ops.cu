// Row-wise and element-wise operators: get_rows, rms_norm, add, swiglu, gather_rows,
// rope_angles, rope, argmax_rows (see ops.h). CPU references: backend/cpu/ops/*.cpp. Built with -fmad=false (see
// CMakeLists.txt), so a * b + c stays two roundings, as on the CPU.
// Tested by tests/ops/row_ops_test.cpp.
#include <cfloat>
#include <climits>
#include <cstdint>
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/ops/rms_norm.cuh"
#include "backend/cuda/ops/rope.cuh"
#include "backend/cuda/ops/silu.cuh"
#include "backend/cuda/quant_traits.cuh"

namespace gufo::cuda {
namespace {

constexpr int kThreads = 256;
// NOTE(row_ops): argmax reads a whole vocabulary row (151936 floats for Qwen3) with one block:
// the widest block and four independent loads per step keep enough reads in flight.
constexpr int kArgmaxThreads = 1024;

unsigned blocks_for(int64_t n, int64_t per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

Status launched(const char* what, int64_t n) {
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), std::string(what) + "(n=" + std::to_string(n) + ")");
  return {};
}

__global__ void get_rows_kernel(WeightView table, const int32_t* ids, float* out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t row = blockIdx.x;
  const int64_t id = ids[row];
  for (int64_t col = threadIdx.x; col < table.cols; col += blockDim.x) {
    out[row * table.cols + col] = dequantize_element(table, id, col);
  }
}

// kThreads threads per normalized segment (rms_norm.cuh); the sum of squares, then the
// scaled values.
template <int kThreads, bool kVec4>
__global__ void __launch_bounds__(256) rms_norm_kernel(const float* x, int64_t n_segments, int64_t cols, const float* w,
                                                       int64_t group, float eps, float* out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  __shared__ float group_sums[256 / gpu::group_lanes];
  const int64_t segment = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kThreads) + threadIdx.x / kThreads;
  const int64_t per_row = cols / group;
  const bool live = segment < n_segments;
  const int64_t base = live ? (segment / per_row) * cols + (segment % per_row) * group : 0;
  const int64_t pieces = live ? group / (kVec4 ? 4 : 1) : 0;
  const float sum_sq = segment_sum_squares<kThreads, kVec4>(x + base, pieces, group_sums);
  if (!live) return;
  scale_segment<kThreads, kVec4>(x + base, pieces, w, rms_scale(sum_sq, group, eps), out + base);
}

__global__ void add_kernel(const float* a, const float* b, int64_t n, int64_t cols, bool broadcast, float* out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = a[i] + b[broadcast ? i % cols : i];
  }
}

__global__ void swiglu_kernel(const float* gate, const float* up, int64_t n, float* out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = silu_times(gate[i], up[i]);
  }
}

__global__ void gather_rows_kernel(const float* x, int64_t cols, const int32_t* rows, float* out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t row = blockIdx.x;
  const float* src = x + static_cast<int64_t>(rows[row]) * cols;
  for (int64_t col = threadIdx.x; col < cols; col += blockDim.x) out[row * cols + col] = src[col];
}

// One thread per (row, pair): the angle as backend/cpu/ops/rope.cpp computes it.
__global__ void rope_angles_kernel(const int32_t* positions, int64_t rows, int64_t head_dim, float theta,
                                   const float* freq_factors, float* angles) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t half = head_dim / 2;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < rows * half;
       item += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float c, s;
    rope_angle(item % half, positions[item / half], head_dim, theta, freq_factors, c, s);
    angles[2 * item] = c;
    angles[2 * item + 1] = s;
  }
}

// One thread per (row, pair, head).
__global__ void rope_kernel(const float* x, float* out, int64_t rows, int64_t cols, const float* angles,
                            int64_t head_dim, bool neox) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t half = head_dim / 2;
  const int64_t n_heads = cols / head_dim;
  const int64_t total = rows * half * n_heads;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < total;
       item += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t head = item % n_heads;
    const int64_t i = (item / n_heads) % half;
    const int64_t row = item / (n_heads * half);
    const float c = angles[2 * (row * half + i)];
    const float s = angles[2 * (row * half + i) + 1];
    const float* h = x + row * cols + head * head_dim;
    float* o = out + row * cols + head * head_dim;
    const int64_t a = neox ? i : 2 * i;
    const int64_t b = neox ? i + half : 2 * i + 1;
    const float x0 = h[a];
    const float x1 = h[b];
    o[a] = x0 * c - x1 * s;
    o[b] = x0 * s + x1 * c;
  }
}

__device__ bool better(float value, int64_t index, float best, int64_t best_index) {
  return value > best || (value == best && index < best_index);
}

__global__ void argmax_kernel(const float* x, int64_t cols, int32_t* out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  __shared__ float best_values[kArgmaxThreads];
  __shared__ int64_t best_indices[kArgmaxThreads];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float best = -INFINITY;
  int64_t best_index = LLONG_MAX;
  constexpr int kInFlight = 4;
  const int64_t step = static_cast<int64_t>(blockDim.x) * kInFlight;
  for (int64_t base = threadIdx.x; base < cols; base += step) {
    float v[kInFlight];
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int64_t col = base + i * static_cast<int64_t>(blockDim.x);
      v[i] = col < cols ? row[col] : -INFINITY;
    }
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int64_t col = base + i * static_cast<int64_t>(blockDim.x);
      if (col < cols && better(v[i], col, best, best_index)) {
        best = v[i];
        best_index = col;
      }
    }
  }
  best_values[threadIdx.x] = best;
  best_indices[threadIdx.x] = best_index;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride &&
        better(best_values[threadIdx.x + stride], best_indices[threadIdx.x + stride], best_values[threadIdx.x],
               best_indices[threadIdx.x])) {
      best_values[threadIdx.x] = best_values[threadIdx.x + stride];
      best_indices[threadIdx.x] = best_indices[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = best_indices[0] == LLONG_MAX ? 0 : static_cast<int32_t>(best_indices[0]);
}

unsigned grid_stride_blocks(int64_t n) {
  // NOTE(row_ops): 65536 blocks of 256 threads cover 16M elements per sweep, more than the
  // GPU runs at once; the grid-stride loops take the rest.
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

Status get_rows(const WeightView& table, const int32_t* ids, int64_t n_ids, float* out, gpu::stream_t stream) {
  if (n_ids < 0 || table.cols < 1) return Error{"get_rows: bad shape"};
  if (n_ids == 0) return {};
  (void)gpu::launch(get_rows_kernel, static_cast<unsigned>(n_ids), kThreads, 0, stream, table, ids, out);
  return launched("get_rows", n_ids);
}

Status rms_norm(const float* x, int64_t rows, int64_t cols, const float* w, int64_t group, float eps, float* out,
                gpu::stream_t stream) {
  if (rows < 0 || group < 1 || cols % group != 0) {
    return Error{"rms_norm: width " + std::to_string(cols) + " is not a multiple of the group " +
                 std::to_string(group)};
  }
  const int64_t segments = rows * (cols / group);
  if (segments == 0) return {};
  // NOTE(rms_norm): float4 pieces where every row and segment starts 16-byte aligned; a
  // block per segment from 1024 values (one warp would walk a 4096-wide row 128 loads deep).
  const bool vec4 =
      group % 4 == 0 && cols % 4 == 0 &&
      ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
  const bool wide = group >= 1024;
  const unsigned grid = wide ? static_cast<unsigned>(segments) : blocks_for(segments, kThreads / gpu::group_lanes);
  if (wide && vec4) {
    (void)gpu::launch(rms_norm_kernel<256, true>, grid, 256, 0, stream, x, segments, cols, w, group, eps, out);
  } else if (wide) {
    (void)gpu::launch(rms_norm_kernel<256, false>, grid, 256, 0, stream, x, segments, cols, w, group, eps, out);
  } else if (vec4) {
    (void)gpu::launch(rms_norm_kernel<gpu::group_lanes, true>, grid, kThreads, 0, stream, x, segments, cols, w, group,
                      eps, out);
  } else {
    (void)gpu::launch(rms_norm_kernel<gpu::group_lanes, false>, grid, kThreads, 0, stream, x, segments, cols, w, group,
                      eps, out);
  }
  return launched("rms_norm", segments);
}

Status add(const float* a, const float* b, int64_t rows, int64_t cols, int64_t b_rows, float* out,
           gpu::stream_t stream) {
  if (b_rows != 1 && b_rows != rows) return Error{"add: b has " + std::to_string(b_rows) + " rows, not 1 or rows"};
  const int64_t n = rows * cols;
  if (n == 0) return {};
  (void)gpu::launch(add_kernel, grid_stride_blocks(n), kThreads, 0, stream, a, b, n, cols, b_rows == 1 && rows != 1,
                    out);
  return launched("add", n);
}

Status swiglu(const float* gate, const float* up, int64_t n, float* out, gpu::stream_t stream) {
  if (n == 0) return {};
  (void)gpu::launch(swiglu_kernel, grid_stride_blocks(n), kThreads, 0, stream, gate, up, n, out);
  return launched("swiglu", n);
}

Status gather_rows(const float* x, int64_t cols, const int32_t* rows, int64_t n_rows, float* out,
                   gpu::stream_t stream) {
  if (n_rows == 0) return {};
  (void)gpu::launch(gather_rows_kernel, static_cast<unsigned>(n_rows), kThreads, 0, stream, x, cols, rows, out);
  return launched("gather_rows", n_rows);
}

Status rope_angles(const int32_t* positions, int64_t rows, int64_t head_dim, float theta, const float* freq_factors,
                   float* angles, gpu::stream_t stream) {
  if (head_dim < 2 || head_dim % 2 != 0) {
    return Error{"rope_angles: head_dim " + std::to_string(head_dim) + " is not even"};
  }
  const int64_t n = rows * head_dim / 2;
  if (n == 0) return {};
  (void)gpu::launch(rope_angles_kernel, grid_stride_blocks(n), kThreads, 0, stream, positions, rows, head_dim, theta,
                    freq_factors, angles);
  return launched("rope_angles", n);
}

Status rope(const float* x, float* out, int64_t rows, int64_t cols, const float* angles, int64_t head_dim, bool neox,
            gpu::stream_t stream) {
  if (head_dim < 2 || head_dim % 2 != 0 || cols % head_dim != 0) {
    return Error{"rope: width " + std::to_string(cols) + " is not a multiple of head_dim " + std::to_string(head_dim)};
  }
  const int64_t n = rows * cols / 2;
  if (n == 0) return {};
  (void)gpu::launch(rope_kernel, grid_stride_blocks(n), kThreads, 0, stream, x, out, rows, cols, angles, head_dim,
                    neox);
  return launched("rope", n);
}

Status argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out, gpu::stream_t stream) {
  if (rows == 0) return {};
  if (cols < 1) return Error{"argmax: empty rows"};
  (void)gpu::launch(argmax_kernel, static_cast<unsigned>(rows), kArgmaxThreads, 0, stream, x, cols, out);
  return launched("argmax", rows);
}

}  // namespace gufo::cuda
