// Matmul for F32, F16 and BF16 weights with f32 activations (see ops.h, mat_mul_float): a
// lane group per weight row and 8 activation rows; lane l accumulates k = l, l + 32, ... by fma
// in order, then the 32 partial sums meet in a fixed butterfly. The order depends on k alone,
// so a row's result is the same in any batch (it differs from the CPU's SIMD order by rounding).
// Tested by tests/ops/mat_mul_test.cpp.
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/expert_block.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/quant_traits.cuh"

namespace gufo::cuda {
namespace {

constexpr int kRowsPerStep = 8;
constexpr int kGroupsPerBlock = 4;

// blockIdx: x = 4 weight rows, y = 8 output rows, z = expert (expert mode).
__global__ void mat_mul_float_kernel(WeightView w, const float* x, int64_t m, int64_t ldx, float* out, int64_t ldo,
                                     ExpertRows experts) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  int64_t n_rows = w.rows, begin = 0, end = m, w_offset = 0;
  if (experts.offsets != nullptr) {
    const int e = block_expert(experts);
    if (e < 0) return;
    n_rows = w.rows_per_expert;
    begin = experts.offsets[e];
    end = experts.offsets[e + 1];
    w_offset = static_cast<int64_t>(e) * w.rows_per_expert;
  }
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kGroupsPerBlock + threadIdx.x / gpu::group_lanes;
  const int64_t first = begin + static_cast<int64_t>(blockIdx.y) * kRowsPerStep;
  if (n >= n_rows || first >= end) return;
  const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
  int64_t x_rows[kRowsPerStep];
#pragma unroll
  for (int r = 0; r < kRowsPerStep; ++r) {
    const int64_t j = first + r < end ? first + r : end - 1;
    x_rows[r] = experts.x_rows != nullptr ? static_cast<int64_t>(experts.x_rows[j]) : j;
  }
  float acc[kRowsPerStep];
#pragma unroll
  for (int r = 0; r < kRowsPerStep; ++r) acc[r] = 0.0f;
  // NOTE(mat_mul_float): kUnroll steps' loads go out before their fmas (the same fmas in the
  // same order): one step at a time, a decode row of the MoE router (2048 wide) waited on
  // memory 64 times, 16 us a layer.
  constexpr int kUnroll = 8;
  int64_t k = lane;
  for (; k + (kUnroll - 1) * gpu::group_lanes < w.cols; k += kUnroll * gpu::group_lanes) {
    float wk[kUnroll], xk[kUnroll][kRowsPerStep];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      wk[u] = dequantize_float(w, w_offset + n, k + u * gpu::group_lanes);
#pragma unroll
      for (int r = 0; r < kRowsPerStep; ++r) xk[u][r] = x[x_rows[r] * ldx + k + u * gpu::group_lanes];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int r = 0; r < kRowsPerStep; ++r) acc[r] = fmaf(wk[u], xk[u][r], acc[r]);
    }
  }
  for (; k < w.cols; k += gpu::group_lanes) {
    const float wk = dequantize_float(w, w_offset + n, k);
#pragma unroll
    for (int r = 0; r < kRowsPerStep; ++r) acc[r] = fmaf(wk, x[x_rows[r] * ldx + k], acc[r]);
  }
#pragma unroll
  for (int r = 0; r < kRowsPerStep; ++r) {
    const float total = gpu::group_sum(acc[r]);
    if (lane == 0 && first + r < end) out[(first + r) * ldo + n] = total;
  }
}

}  // namespace

Status mat_mul_float(const WeightView& w, const float* x, int64_t m, int64_t ldx, float* out, int64_t ldo,
                     const ExpertRows* experts, gpu::stream_t stream) {
  if (w.type != DType::F32 && w.type != DType::F16 && w.type != DType::BF16) {
    return Error{"mat_mul_float: weight type " + std::string(dtype_name(w.type)) + " is not a float type"};
  }
  if (m == 0 || w.rows == 0) return {};
  const int64_t n_rows = experts != nullptr ? w.rows_per_expert : w.rows;
  const int64_t n_out = experts != nullptr ? experts->max_rows : m;
  if (n_out == 0) return {};
  const dim3 grid(static_cast<unsigned>((n_rows + kGroupsPerBlock - 1) / kGroupsPerBlock),
                  static_cast<unsigned>((n_out + kRowsPerStep - 1) / kRowsPerStep),
                  static_cast<unsigned>(experts != nullptr ? expert_grid(*experts) : 1));
  (void)gpu::launch(mat_mul_float_kernel, grid, kGroupsPerBlock * gpu::group_lanes, 0, stream, w, x, m, ldx, out, ldo,
                    experts != nullptr ? *experts : ExpertRows{});
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "mat_mul_float(" + std::to_string(w.rows) + "x" +
                                                      std::to_string(w.cols) + ", " + std::to_string(m) + " rows)");
  return {};
}

}  // namespace gufo::cuda
