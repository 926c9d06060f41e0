// Matmul for F32, F16 and BF16 weights with f32 activations (see ops.h, mat_mul_float): a
// group of kWarps warps per weight row and 8 activation rows; thread t of the group accumulates
// k = t, t + 32 kWarps, ... by fma in order, the warp's 32 partial sums meet in a fixed
// butterfly and the warps' sums are added in warp order. kWarps follows the weight's row count
// (mat_mul_float), so the order depends on the weight alone: a row's result is the same in any
// batch (it differs from the CPU's SIMD order by rounding).
// Tested by tests/ops/mat_mul_test.cpp.
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/expert_block.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/quant_traits.cuh"

namespace gufo::cuda {
namespace {

constexpr int kRowsPerStep = 8;

// blockIdx: x = kRowsPerBlock weight rows, y = 8 output rows, z = expert (expert mode).
template <int kRowsPerBlock, int kWarps>
__global__ void __launch_bounds__(kRowsPerBlock* kWarps * 32)
    mat_mul_float_kernel(WeightView w, const float* x, int64_t m, int64_t ldx, float* out, int64_t ldo,
                         ExpertRows experts) {
  constexpr int kThreads = kWarps * gpu::group_lanes;  // a weight row's threads
  __shared__ float warp_sums[kRowsPerBlock][kWarps][kRowsPerStep];
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
  const int row_in_block = static_cast<int>(threadIdx.x / kThreads);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + row_in_block;
  const int64_t first = begin + static_cast<int64_t>(blockIdx.y) * kRowsPerStep;
  // NOTE(mat_mul_float): a whole block leaves here or none of it (first and end are the
  // block's; the last block's second row past the end stays for the barrier below).
  const bool past_end = n >= n_rows;
  if (first >= end || (kWarps == 1 && past_end)) return;
  const int64_t w_row = w_offset + (past_end ? n_rows - 1 : n);
  const int t = static_cast<int>(threadIdx.x % kThreads);
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
  int64_t k = t;
  for (; k + (kUnroll - 1) * kThreads < w.cols; k += kUnroll * kThreads) {
    float wk[kUnroll], xk[kUnroll][kRowsPerStep];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      wk[u] = dequantize_float(w, w_row, k + u * kThreads);
#pragma unroll
      for (int r = 0; r < kRowsPerStep; ++r) xk[u][r] = x[x_rows[r] * ldx + k + u * kThreads];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int r = 0; r < kRowsPerStep; ++r) acc[r] = fmaf(wk[u], xk[u][r], acc[r]);
    }
  }
  for (; k < w.cols; k += kThreads) {
    const float wk = dequantize_float(w, w_row, k);
#pragma unroll
    for (int r = 0; r < kRowsPerStep; ++r) acc[r] = fmaf(wk, x[x_rows[r] * ldx + k], acc[r]);
  }
  const int lane = t % gpu::group_lanes;
#pragma unroll
  for (int r = 0; r < kRowsPerStep; ++r) acc[r] = gpu::group_sum(acc[r]);
  if constexpr (kWarps > 1) {
    const int warp = t / gpu::group_lanes;
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < kRowsPerStep; ++r) warp_sums[row_in_block][warp][r] = acc[r];
    }
    __syncthreads();
    if (t >= kRowsPerStep || past_end) return;
    // Thread r adds the warps' sums for activation row r, in warp order.
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) total += warp_sums[row_in_block][i][t];
    if (first + t < end) out[(first + t) * ldo + n] = total;
  } else {
#pragma unroll
    for (int r = 0; r < kRowsPerStep; ++r) {
      if (lane == 0 && first + r < end) out[(first + r) * ldo + n] = acc[r];
    }
  }
}

// NOTE(mat_mul_float): a warp per weight row left the MoE router (128 rows x 2048, F32) in 32
// blocks, each warp making 8 trips to memory: ~10 us for 1 MB (H100, ncu, session 18). Weights
// of fewer rows than kSplitBelow take kSplitWarps warps per row. Measured on an H100 (30B-A3B
// q4_k_m, two rounds, session 19): eight warps (two rows a block in a batch) tg128 298.4 /
// 296.9 t/s, pp512 8,956 / 9,069; four (four rows a block in a batch, which share their
// activation loads as the warp-a-row layout's blocks did) 296.5 / 294.8, 9,208 / 9,195; two
// 291.0 / 289.4, 9,258 / 9,238; a warp a row (before) ~270 and ~9,300.
constexpr int64_t kSplitBelow = 1024;
constexpr int kSplitWarps = 4;

template <int kRowsPerBlock, int kWarps>
void launch_float(const WeightView& w, const float* x, int64_t m, int64_t ldx, float* out, int64_t ldo,
                  const ExpertRows* experts, int64_t n_rows, int64_t n_out, gpu::stream_t stream) {
  const dim3 grid(static_cast<unsigned>((n_rows + kRowsPerBlock - 1) / kRowsPerBlock),
                  static_cast<unsigned>((n_out + kRowsPerStep - 1) / kRowsPerStep),
                  static_cast<unsigned>(experts != nullptr ? expert_grid(*experts) : 1));
  (void)gpu::launch(mat_mul_float_kernel<kRowsPerBlock, kWarps>, grid, kRowsPerBlock * kWarps * gpu::group_lanes, 0,
                    stream, w, x, m, ldx, out, ldo, experts != nullptr ? *experts : ExpertRows{});
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
  if (n_rows < kSplitBelow) {
    // (A batch: four weight rows a block share their activation rows' loads in L1; the same
    // warps a row, so the same order.)
    if (n_out > kRowsPerStep) {
      launch_float<4, kSplitWarps>(w, x, m, ldx, out, ldo, experts, n_rows, n_out, stream);
    } else {
      launch_float<1, kSplitWarps>(w, x, m, ldx, out, ldo, experts, n_rows, n_out, stream);
    }
  } else {
    launch_float<4, 1>(w, x, m, ldx, out, ldo, experts, n_rows, n_out, stream);
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "mat_mul_float(" + std::to_string(w.rows) + "x" +
                                                      std::to_string(w.cols) + ", " + std::to_string(m) + " rows)");
  return {};
}

}  // namespace gufo::cuda
