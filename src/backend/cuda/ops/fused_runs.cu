// The fused runs of fusion_plan.h: add_rms_norm (a residual add, the RmsNorm of its sum and
// the quantization of the normalized rows), qk_norm_rope (Qwen3's per-head q/k norms and
// RoPE) and swiglu_quant. Each repeats the separate kernels' float operations in their order
// (rms_norm.cuh, quantize_block.cuh, row_ops.cu's rope angle and silu), so the outputs are
// their bits.
// Tested by tests/ops/fused_test.cpp (against the separate kernels, bit for bit).
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/ops/quantize_block.cuh"
#include "backend/cuda/ops/rms_norm.cuh"
#include "backend/cuda/ops/rope.cuh"
#include "backend/cuda/ops/silu.cuh"

namespace gufo::cuda {
namespace {

constexpr int kThreads = 256;

struct AddNormArgs {
  const float* a;
  const float* b;  // null: the norm of a alone
  float* sum;      // a + b (with b)
  int64_t rows;
  int64_t cols;
  const float* w;
  float eps;
  float* out;
  QuantActs quant;  // qs null: no quantization
};

// A segment is a whole row: kSeg threads per row (256: a block; group_lanes: a lane group,
// 256 / group_lanes rows per block), as rms_norm() picks them.
template <int kSeg, bool kVec4, int kQBlock>
__global__ void __launch_bounds__(kThreads) add_norm_kernel(AddNormArgs a) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  __shared__ float group_sums[kThreads / gpu::group_lanes];
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kThreads / kSeg) + threadIdx.x / kSeg;
  const bool live = row < a.rows;
  const int64_t base = live ? row * a.cols : 0;
  const int64_t pieces = live ? a.cols / (kVec4 ? 4 : 1) : 0;
  const int tid = static_cast<int>(threadIdx.x % kSeg);
  const float* in = a.a + base;
  if (a.b != nullptr) {
    // add_kernel's a + b; each thread reads back only the pieces it wrote.
    for (int64_t i = tid; i < pieces; i += kSeg) {
      if constexpr (kVec4) {
        const float4 x = reinterpret_cast<const float4*>(a.a + base)[i];
        const float4 y = reinterpret_cast<const float4*>(a.b + base)[i];
        reinterpret_cast<float4*>(a.sum + base)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
      } else {
        a.sum[base + i] = a.a[base + i] + a.b[base + i];
      }
    }
    in = a.sum + base;
  }
  const float sum_sq = segment_sum_squares<kSeg, kVec4>(in, pieces, group_sums);
  if (live) scale_segment<kSeg, kVec4>(in, pieces, a.w, rms_scale(sum_sq, a.cols, a.eps), a.out + base);
  if constexpr (kQBlock > 0) {
    // The normalized row is in global memory, written by this block: visible after the barrier.
    __syncthreads();
    if (!live) return;
    const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
    constexpr int kGroupsPerSeg = kSeg / gpu::group_lanes;
    const int group = static_cast<int>(tid / gpu::group_lanes);
    for (int64_t index = group; index < a.cols / kQBlock; index += kGroupsPerSeg) {
      quantize_block<kQBlock>(a.out, a.cols, row, index, lane, a.quant);
    }
  }
}

template <int kSeg, bool kVec4>
void launch_add_norm(const AddNormArgs& a, int q_block, gpu::stream_t stream) {
  const auto grid = static_cast<unsigned>((a.rows + kThreads / kSeg - 1) / (kThreads / kSeg));
  switch (q_block) {
    case 32: (void)gpu::launch(add_norm_kernel<kSeg, kVec4, 32>, grid, kThreads, 0, stream, a); break;
    case 256: (void)gpu::launch(add_norm_kernel<kSeg, kVec4, 256>, grid, kThreads, 0, stream, a); break;
    default: (void)gpu::launch(add_norm_kernel<kSeg, kVec4, 0>, grid, kThreads, 0, stream, a); break;
  }
}

// A lane group per (row, head): q's heads, then k's. Lane l holds float4 piece l of the head
// (head_dim / 4 <= 32 pieces); neox pairs (e, e + head_dim / 2) are head_dim / 8 lanes apart.
__global__ void __launch_bounds__(kThreads) qk_norm_rope_kernel(QkNormRopeArgs a) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t heads = a.n_head + a.n_head_kv;
  const int64_t segment = static_cast<int64_t>(blockIdx.x) * (kThreads / gpu::group_lanes) + threadIdx.x / gpu::group_lanes;
  const bool live = segment < a.rows * heads;
  const int64_t row = live ? segment / heads : 0;
  const int64_t head = segment % heads;
  const bool is_q = head < a.n_head;
  const int64_t width = (is_q ? a.n_head : a.n_head_kv) * a.head_dim;
  const int64_t base = row * width + (is_q ? head : head - a.n_head) * a.head_dim;
  const float* in = (is_q ? a.q : a.k) + base;
  const float* w = is_q ? a.q_norm : a.k_norm;
  float* normed = (is_q ? a.q_normed : a.k_normed) + base;
  float* roped = (is_q ? a.q_out : a.k_out) + base;
  const int pieces = static_cast<int>(a.head_dim / 4);
  const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
  const float sum_sq = segment_sum_squares<gpu::group_lanes, true>(in, live ? pieces : 0, nullptr);
  const float inv_rms = rms_scale(sum_sq, a.head_dim, a.eps);
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (live && lane < pieces) {
    const float4 x = reinterpret_cast<const float4*>(in)[lane];
    const float4 g = reinterpret_cast<const float4*>(w)[lane];
    v = make_float4(x.x * inv_rms * g.x, x.y * inv_rms * g.y, x.z * inv_rms * g.z, x.w * inv_rms * g.w);
    reinterpret_cast<float4*>(normed)[lane] = v;
  }
  const int apart = pieces / 2;
  const bool first_half = lane < apart;
  const int partner = first_half ? lane + apart : lane - apart;
  const float4 p = make_float4(gpu::shfl(v.x, partner), gpu::shfl(v.y, partner), gpu::shfl(v.z, partner),
                               gpu::shfl(v.w, partner));
  if (!live || lane >= pieces) return;
  const int32_t position = a.positions[row];
  const float mine[4] = {v.x, v.y, v.z, v.w};
  const float theirs[4] = {p.x, p.y, p.z, p.w};
  float result[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t i = (first_half ? lane : lane - apart) * 4 + j;  // the pair
    float c, s;
    rope_angle(i, position, a.head_dim, a.theta, a.freq_factors, c, s);
    // rope_kernel: o[a] = x0 * c - x1 * s; o[b] = x0 * s + x1 * c (x0 = h[a], x1 = h[b]).
    result[j] = first_half ? mine[j] * c - theirs[j] * s : theirs[j] * s + mine[j] * c;
  }
  reinterpret_cast<float4*>(roped)[lane] = make_float4(result[0], result[1], result[2], result[3]);
}

// A lane group per quantization block: lane l computes its kBlock / 32 products, writes them,
// and quantize_block reads back exactly the values that lane wrote.
template <int kBlock>
__global__ void __launch_bounds__(kThreads) swiglu_quant_kernel(const float* gate, const float* up, int64_t rows,
                                                                int64_t cols, float* out, QuantActs quant) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  constexpr int kPerLane = kBlock / 32;
  const int64_t per_row = cols / kBlock;
  const int64_t block = static_cast<int64_t>(blockIdx.x) * (kThreads / gpu::group_lanes) + threadIdx.x / gpu::group_lanes;
  if (block >= rows * per_row) return;
  const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
  const int64_t row = block / per_row;
  const int64_t first = row * cols + (block % per_row) * kBlock + lane * kPerLane;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) out[first + i] = silu_times(gate[first + i], up[first + i]);
  quantize_block<kBlock>(out, cols, row, block % per_row, lane, quant);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

Status add_rms_norm(const float* a, const float* b, int64_t rows, int64_t cols, float* sum, const float* w, float eps,
                    float* out, const QuantActs* quant, gpu::stream_t stream) {
  const int q_block = quant == nullptr ? 0 : quant->q8k ? 256 : 32;
  if (cols < 1 || (q_block > 0 && (cols % q_block != 0 || quant->k != cols || quant->rows != rows))) {
    return Error{"add_rms_norm: width " + std::to_string(cols) + " does not fit the quantized activations"};
  }
  if (rows == 0) return {};
  const AddNormArgs args{a, b, sum, rows, cols, w, eps, out, quant != nullptr ? *quant : QuantActs{}};
  // rms_norm()'s choices, so that the sums go in its order.
  const bool vec4 = cols % 4 == 0 && aligned16(a) && aligned16(w) && aligned16(out) &&
                    (b == nullptr || (aligned16(b) && aligned16(sum)));
  const bool wide = cols >= 1024;
  if (wide && vec4) {
    launch_add_norm<kThreads, true>(args, q_block, stream);
  } else if (wide) {
    launch_add_norm<kThreads, false>(args, q_block, stream);
  } else if (vec4) {
    launch_add_norm<gpu::group_lanes, true>(args, q_block, stream);
  } else {
    launch_add_norm<gpu::group_lanes, false>(args, q_block, stream);
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "add_rms_norm(rows=" + std::to_string(rows) + ")");
  return {};
}

Status swiglu_quant(const float* gate, const float* up, int64_t rows, int64_t cols, float* out, const QuantActs& quant,
                    gpu::stream_t stream) {
  const int64_t block = quant.q8k ? 256 : 32;
  if (cols % block != 0 || quant.k != cols || quant.rows != rows) {
    return Error{"swiglu_quant: width " + std::to_string(cols) + " does not fit the quantized activations"};
  }
  const int64_t n_blocks = rows * (cols / block);
  if (n_blocks == 0) return {};
  constexpr int64_t kPerCta = kThreads / gpu::group_lanes;
  const auto grid = static_cast<unsigned>((n_blocks + kPerCta - 1) / kPerCta);
  if (quant.q8k) {
    (void)gpu::launch(swiglu_quant_kernel<256>, grid, kThreads, 0, stream, gate, up, rows, cols, out, quant);
  } else {
    (void)gpu::launch(swiglu_quant_kernel<32>, grid, kThreads, 0, stream, gate, up, rows, cols, out, quant);
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "swiglu_quant(rows=" + std::to_string(rows) + ")");
  return {};
}

bool qk_norm_rope_supports(int64_t head_dim) { return head_dim % 8 == 0 && head_dim / 4 <= gpu::group_lanes; }

Status qk_norm_rope(const QkNormRopeArgs& args, gpu::stream_t stream) {
  if (!qk_norm_rope_supports(args.head_dim)) {
    return Error{"qk_norm_rope: head_dim " + std::to_string(args.head_dim) + " is not a multiple of 8 up to 128"};
  }
  const int64_t segments = args.rows * (args.n_head + args.n_head_kv);
  if (segments == 0) return {};
  for (const void* p : {static_cast<const void*>(args.q), static_cast<const void*>(args.k),
                        static_cast<const void*>(args.q_norm), static_cast<const void*>(args.k_norm),
                        static_cast<const void*>(args.q_normed), static_cast<const void*>(args.k_normed),
                        static_cast<const void*>(args.q_out), static_cast<const void*>(args.k_out)}) {
    if (!aligned16(p)) return Error{"qk_norm_rope: a buffer is not 16-byte aligned"};
  }
  constexpr int64_t kPerBlock = kThreads / gpu::group_lanes;
  (void)gpu::launch(qk_norm_rope_kernel, static_cast<unsigned>((segments + kPerBlock - 1) / kPerBlock), kThreads, 0,
                    stream, args);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "qk_norm_rope(rows=" + std::to_string(args.rows) + ")");
  return {};
}

}  // namespace gufo::cuda
