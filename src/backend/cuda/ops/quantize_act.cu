// Activation quantization for the integer matmul (see ops.h, QuantActs): the CPU's
// quantize_activation_q8_0 / _q8_k (backend/cpu/quant/dot_scalar.cpp) with the same float
// operations, so the same quants and scales. One lane group per block: for 32-blocks lane l
// takes value l, for 256-blocks values 8l to 8l + 7.
// Tested by tests/ops/mat_mul_test.cpp (through the matmul, bit for bit).
#include <string>

#include "backend/cuda/alignment.h"
#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/ops/quantize_block.cuh"

namespace gufo::cuda {
namespace {

// Blocks of `block` values (32 or 256); each group of 32 lanes handles one block.
template <int kBlock>
__global__ void quantize_kernel(const float* x, int64_t ldx, QuantActs out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t blocks_per_row = out.k / kBlock;
  const int64_t block =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / gpu::group_lanes) + threadIdx.x / gpu::group_lanes;
  if (block >= out.rows * blocks_per_row) return;
  const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
  quantize_block<kBlock>(x, ldx, block / blocks_per_row, block % blocks_per_row, lane, out);
}

}  // namespace

size_t quant_acts_bytes(int64_t rows, int64_t k, bool q8k) {
  const auto r = static_cast<size_t>(rows);
  const auto kk = static_cast<size_t>(k);
  return aligned_bytes(r * kk) + aligned_bytes(r * (kk / (q8k ? 256 : 32)) * sizeof(float)) +
         (q8k ? aligned_bytes(r * (kk / 32) * sizeof(int32_t)) + aligned_bytes(r * (kk / 16)) : 0);
}

QuantActs quant_acts_at(void* memory, int64_t rows, int64_t k, bool q8k) {
  auto* base = static_cast<std::byte*>(memory);
  const auto r = static_cast<size_t>(rows);
  const auto kk = static_cast<size_t>(k);
  QuantActs acts;
  acts.rows = rows;
  acts.k = k;
  acts.q8k = q8k;
  acts.qs = reinterpret_cast<int8_t*>(base);
  base += aligned_bytes(r * kk);
  acts.d = reinterpret_cast<float*>(base);
  base += aligned_bytes(r * (kk / (q8k ? 256 : 32)) * sizeof(float));
  if (q8k) {
    acts.sum32 = reinterpret_cast<int32_t*>(base);
    base += aligned_bytes(r * (kk / 32) * sizeof(int32_t));
    acts.sum_parts = reinterpret_cast<int8_t*>(base);
  }
  return acts;
}

Status quantize_acts(const float* x, int64_t ldx, const QuantActs& out, gpu::stream_t stream) {
  const int64_t block = out.q8k ? 256 : 32;
  if (out.k % block != 0) {
    return Error{"quantize_acts: width " + std::to_string(out.k) + " is not a multiple of " + std::to_string(block)};
  }
  const int64_t n_blocks = out.rows * (out.k / block);
  if (n_blocks == 0) return {};
  constexpr int kThreads = 256;
  constexpr int64_t kBlocksPerCta = kThreads / gpu::group_lanes;
  const auto grid = static_cast<unsigned>((n_blocks + kBlocksPerCta - 1) / kBlocksPerCta);
  if (out.q8k) {
    (void)gpu::launch(quantize_kernel<256>, grid, kThreads, 0, stream, x, ldx, out);
  } else {
    (void)gpu::launch(quantize_kernel<32>, grid, kThreads, 0, stream, x, ldx, out);
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "quantize_acts(rows=" + std::to_string(out.rows) + ")");
  return {};
}

}  // namespace gufo::cuda
