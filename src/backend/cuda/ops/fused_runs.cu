// The fused runs of fusion_plan.h: add_rms_norm (a residual add, the RmsNorm of its sum and
// the quantization of the normalized rows), qk_norm_rope (Qwen3's per-head q/k norms and
// RoPE by rope_angles()'s table, and the KV cache store) and swiglu_quant. Each repeats the
// separate kernels' float operations in their order (rms_norm.cuh, quantize_block.cuh, rope's
// rotation, silu), so the outputs are their bits.
// Tested by tests/ops/fused_test.cpp (against the separate kernels, bit for bit).
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/kv_layer.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/ops/quantize_block.cuh"
#include "backend/cuda/ops/rms_norm.cuh"
#include "backend/cuda/ops/silu.cuh"

namespace gufo::cuda {
namespace {

constexpr int kThreads = 256;

// Four values of a cache row from `at` on, converted as kv_store converts them.
__device__ inline void store_kv4(const KvLayer& kv, void* pool, int64_t at, float4 x) {
  store_kv(kv, pool, at, x.x);
  store_kv(kv, pool, at + 1, x.y);
  store_kv(kv, pool, at + 2, x.z);
  store_kv(kv, pool, at + 3, x.w);
}

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

// NOTE(fused_runs): a wide row of up to kRowThreads * kRowPieces float4 pieces (8192 values)
// stays in registers from its load to its quantization, a piece or two per thread of a
// 1024-thread block: one trip to memory for the inputs, where add_norm_kernel reads the sum
// and the normalized row back, and enough warps to hide the latency of each instruction (with
// 8 warps and 16 pieces each, ncu saw 2,300 dependent instructions a warp: 7 us a row).
constexpr int kRowThreads = 1024;
constexpr int kRowPieces = 2;

// The quantization of a row held as add_norm_row_kernel holds it (thread t: float4 pieces t,
// t + kRowThreads; zeros past the row): a block of kQBlock values is kQBlock / 4 consecutive
// threads of one pass, which find its largest magnitude together (lane groups, and for
// 256-blocks a pair of groups through shared memory) and quantize their own pieces with
// quantize_block's operations. The passes go side by side, so their reductions overlap.
template <int kQBlock>
__device__ inline void quantize_row_pieces(const float4 (&v)[kRowPieces], int64_t pieces, int64_t row,
                                           const QuantActs& quant) {
  constexpr int kQThreads = kQBlock / 4;  // threads per quantization block: 8 or 64
  constexpr int kLanes = kQThreads < gpu::group_lanes ? kQThreads : gpu::group_lanes;
  constexpr int kGroups = kRowThreads / gpu::group_lanes;
  __shared__ float group_max[kRowPieces][kGroups];
  const int tid = static_cast<int>(threadIdx.x);
  float amax[kRowPieces];
#pragma unroll
  for (int it = 0; it < kRowPieces; ++it) {
    amax[it] = fmaxf(fmaxf(fmaxf(fmaxf(0.0f, fabsf(v[it].x)), fabsf(v[it].y)), fabsf(v[it].z)), fabsf(v[it].w));
  }
#pragma unroll
  for (int mask = 1; mask < kLanes; mask *= 2) {
#pragma unroll
    for (int it = 0; it < kRowPieces; ++it) amax[it] = fmaxf(amax[it], gpu::shfl_xor(amax[it], mask));
  }
  if constexpr (kQThreads > gpu::group_lanes) {
    if (tid % gpu::group_lanes == 0) {
#pragma unroll
      for (int it = 0; it < kRowPieces; ++it) group_max[it][tid / gpu::group_lanes] = amax[it];
    }
    __syncthreads();
    const int first_group = (tid / kQThreads) * (kQThreads / gpu::group_lanes);
#pragma unroll
    for (int it = 0; it < kRowPieces; ++it) {
      amax[it] = 0.0f;
      for (int g = 0; g < kQThreads / gpu::group_lanes; ++g) amax[it] = fmaxf(amax[it], group_max[it][first_group + g]);
    }
  }
  int sums[kRowPieces];
#pragma unroll
  for (int it = 0; it < kRowPieces; ++it) {
    const int64_t i = tid + static_cast<int64_t>(it) * kRowThreads;
    sums[it] = 0;
    if (i >= pieces) continue;
    const auto [d, inv_d] = q8_scale(amax[it]);
    const int8_t q[4] = {to_q8(v[it].x * inv_d), to_q8(v[it].y * inv_d), to_q8(v[it].z * inv_d),
                         to_q8(v[it].w * inv_d)};
    *reinterpret_cast<char4*>(quant.qs + row * quant.k + 4 * i) = make_char4(q[0], q[1], q[2], q[3]);
    if (tid % kQThreads == 0) quant.d[row * (quant.k / kQBlock) + 4 * i / kQBlock] = d;
    sums[it] = q[0] + q[1] + q[2] + q[3];
  }
  if (quant.sum32 == nullptr) return;
#pragma unroll
  for (int mask = 1; mask < 8; mask *= 2) {  // 8 pieces: a run of 32
#pragma unroll
    for (int it = 0; it < kRowPieces; ++it) sums[it] += gpu::shfl_xor(sums[it], mask);
  }
#pragma unroll
  for (int it = 0; it < kRowPieces; ++it) {
    const int64_t i = tid + static_cast<int64_t>(it) * kRowThreads;
    if (i < pieces && tid % 8 == 0) store_sum32(quant, row, 4 * i / 32, sums[it]);
  }
}

// add_norm_kernel<kThreads, true, kQBlock>'s outputs from registers. Its sum of squares keeps
// that kernel's order: thread t < kThreads adds the squares of pieces t, t + kThreads, ... (left
// in shared memory by their owners) in order, then the fixed tree of segment_total<kThreads>.
template <int kQBlock>
__global__ void __launch_bounds__(kRowThreads) add_norm_row_kernel(AddNormArgs a) {
  __shared__ float squares[kRowThreads * kRowPieces];
  __shared__ float group_sums[kThreads / gpu::group_lanes];
  const int64_t row = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t pieces = a.cols / 4;
  const int64_t base = row * a.cols;
  float4 w[kRowPieces], x[kRowPieces];
#pragma unroll
  for (int it = 0; it < kRowPieces; ++it) {  // the norm weight: no kernel writes it
    const int64_t i = tid + static_cast<int64_t>(it) * kRowThreads;
    if (i < pieces) w[it] = reinterpret_cast<const float4*>(a.w)[i];
  }
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
#pragma unroll
  for (int it = 0; it < kRowPieces; ++it) {
    const int64_t i = tid + static_cast<int64_t>(it) * kRowThreads;
    if (i >= pieces) break;
    x[it] = reinterpret_cast<const float4*>(a.a + base)[i];
    if (a.b != nullptr) {
      const float4 y = reinterpret_cast<const float4*>(a.b + base)[i];
      x[it] = make_float4(x[it].x + y.x, x[it].y + y.y, x[it].z + y.z, x[it].w + y.w);
      reinterpret_cast<float4*>(a.sum + base)[i] = x[it];
    }
    squares[i] = piece_squares(x[it]);
  }
  __syncthreads();
  float sum_sq = 0.0f;
  for (int64_t i = tid; tid < kThreads && i < pieces; i += kThreads) sum_sq = sum_sq + squares[i];
  sum_sq = gpu::group_sum(sum_sq);  // (warps past kThreads sum zeros and keep them)
  if (tid < kThreads && tid % gpu::group_lanes == 0) group_sums[tid / gpu::group_lanes] = sum_sq;
  __syncthreads();
  sum_sq = 0.0f;
#pragma unroll
  for (int j = 0; j < kThreads / gpu::group_lanes; ++j) sum_sq += group_sums[j];
  const float inv_rms = rms_scale(sum_sq, a.cols, a.eps);
  float4 v[kRowPieces];
#pragma unroll
  for (int it = 0; it < kRowPieces; ++it) {
    const int64_t i = tid + static_cast<int64_t>(it) * kRowThreads;
    v[it] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i >= pieces) continue;
    v[it] = make_float4(x[it].x * inv_rms * w[it].x, x[it].y * inv_rms * w[it].y, x[it].z * inv_rms * w[it].z,
                        x[it].w * inv_rms * w[it].w);
    reinterpret_cast<float4*>(a.out + base)[i] = v[it];
  }
  if constexpr (kQBlock > 0) quantize_row_pieces<kQBlock>(v, pieces, row, a.quant);
}

template <int kSeg, bool kVec4>
void launch_add_norm(const AddNormArgs& a, int q_block, gpu::stream_t stream) {
  const auto grid = static_cast<unsigned>((a.rows + kThreads / kSeg - 1) / (kThreads / kSeg));
  switch (q_block) {
    case 32:
      (void)gpu::launch(add_norm_kernel<kSeg, kVec4, 32>, grid, kThreads, 0, stream, a);
      break;
    case 256:
      (void)gpu::launch(add_norm_kernel<kSeg, kVec4, 256>, grid, kThreads, 0, stream, a);
      break;
    default:
      (void)gpu::launch(add_norm_kernel<kSeg, kVec4, 0>, grid, kThreads, 0, stream, a);
      break;
  }
}

// A lane group per (row, head): q's heads, then k's, then (storing the KV cache) v's. Lane l
// holds float4 piece l of the head (head_dim / 4 <= 32 pieces); neox pairs (e, e + head_dim /
// 2) are head_dim / 8 lanes apart. The norm weights and the positions need nothing an earlier
// kernel writes (the batch is copied before the first kernel), so they are read while that
// kernel finishes; the angles (a kernel of this forward wrote them) come after the wait.
__global__ void __launch_bounds__(kThreads) qk_norm_rope_kernel(QkNormRopeArgs a) {
  const bool store = a.kv.k != nullptr;
  const int64_t heads = a.n_head + a.n_head_kv * (store ? 2 : 1);
  const int64_t segment =
      static_cast<int64_t>(blockIdx.x) * (kThreads / gpu::group_lanes) + threadIdx.x / gpu::group_lanes;
  const bool live = segment < a.rows * heads;
  const int64_t row = live ? segment / heads : 0;
  const int64_t head = segment % heads;
  const bool is_q = head < a.n_head;
  const bool is_v = head >= a.n_head + a.n_head_kv;
  const int64_t kv_head = is_v ? head - a.n_head - a.n_head_kv : head - a.n_head;
  const int64_t width = (is_q ? a.n_head : a.n_head_kv) * a.head_dim;
  const int64_t base = row * width + (is_q ? head : kv_head) * a.head_dim;
  const int pieces = static_cast<int>(a.head_dim / 4);
  const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
  const int apart = pieces / 2;
  const bool first_half = lane < apart;
  const bool has_piece = live && lane < pieces;
  const int32_t position = live ? a.positions[row] : 0;
  float4 g = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (has_piece && !is_v) g = reinterpret_cast<const float4*>(is_q ? a.q_norm : a.k_norm)[lane];
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  // The (cos, sin) of pairs 4p .. 4p + 3, p = this lane's piece in its half: two float4s.
  float4 cs[2] = {};
  if (has_piece && !is_v) {
    const float4* pairs =
        reinterpret_cast<const float4*>(a.angles + row * a.head_dim) + 2 * (first_half ? lane : lane - apart);
    cs[0] = pairs[0];
    cs[1] = pairs[1];
  }
  const float c[4] = {cs[0].x, cs[0].z, cs[1].x, cs[1].z};
  const float s[4] = {cs[0].y, cs[0].w, cs[1].y, cs[1].w};
  const int32_t seq = store && live ? a.seq_ids[row] : kPaddingSeq;
  const int64_t cache_at =
      seq != kPaddingSeq ? cache_row(a.kv, seq, position) * a.kv.n_embd_kv + kv_head * a.head_dim + 4 * lane : 0;
  if (is_v) {  // (a whole lane group: heads are uniform per group)
    if (has_piece && seq != kPaddingSeq)
      store_kv4(a.kv, a.kv.v, cache_at, reinterpret_cast<const float4*>(a.v + base)[lane]);
    return;
  }
  const float* in = (is_q ? a.q : a.k) + base;
  float* normed = (is_q ? a.q_normed : a.k_normed) + base;
  float* roped = (is_q ? a.q_out : a.k_out) + base;
  const float sum_sq = segment_sum_squares<gpu::group_lanes, true>(in, live ? pieces : 0, nullptr);
  const float inv_rms = rms_scale(sum_sq, a.head_dim, a.eps);
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (has_piece) {
    const float4 x = reinterpret_cast<const float4*>(in)[lane];
    v = make_float4(x.x * inv_rms * g.x, x.y * inv_rms * g.y, x.z * inv_rms * g.z, x.w * inv_rms * g.w);
    reinterpret_cast<float4*>(normed)[lane] = v;
  }
  const int partner = first_half ? lane + apart : lane - apart;
  const float4 p =
      make_float4(gpu::shfl(v.x, partner), gpu::shfl(v.y, partner), gpu::shfl(v.z, partner), gpu::shfl(v.w, partner));
  if (!has_piece) return;
  const float mine[4] = {v.x, v.y, v.z, v.w};
  const float theirs[4] = {p.x, p.y, p.z, p.w};
  float result[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // rope_kernel: o[a] = x0 * c - x1 * s; o[b] = x0 * s + x1 * c (x0 = h[a], x1 = h[b]).
    result[j] = first_half ? mine[j] * c[j] - theirs[j] * s[j] : theirs[j] * s[j] + mine[j] * c[j];
  }
  const float4 out = make_float4(result[0], result[1], result[2], result[3]);
  reinterpret_cast<float4*>(roped)[lane] = out;
  if (!is_q && seq != kPaddingSeq) store_kv4(a.kv, a.kv.k, cache_at, out);
}

// A lane group per quantization block: lane l computes its kBlock / 32 products, writes them,
// and quantizes them from its registers. kVec4: the lane's values move as float4 (two loads
// of each input and two stores where there were eight of each, 32 bytes apart across the warp).
template <int kBlock, bool kVec4>
__global__ void __launch_bounds__(kThreads)
    swiglu_quant_kernel(const float* gate, const float* up, int64_t rows, int64_t cols, float* out, QuantActs quant) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  constexpr int kPerLane = kBlock / 32;
  static_assert(!kVec4 || kPerLane % 4 == 0);
  const int64_t per_row = cols / kBlock;
  const int64_t block =
      static_cast<int64_t>(blockIdx.x) * (kThreads / gpu::group_lanes) + threadIdx.x / gpu::group_lanes;
  if (block >= rows * per_row) return;
  const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
  const int64_t row = block / per_row;
  const int64_t first = row * cols + (block % per_row) * kBlock + lane * kPerLane;
  float values[kPerLane];
  if constexpr (kVec4) {
#pragma unroll
    for (int i = 0; i < kPerLane; i += 4) {
      const float4 g = *reinterpret_cast<const float4*>(gate + first + i);
      const float4 u = *reinterpret_cast<const float4*>(up + first + i);
      const float4 v =
          make_float4(silu_times(g.x, u.x), silu_times(g.y, u.y), silu_times(g.z, u.z), silu_times(g.w, u.w));
      *reinterpret_cast<float4*>(out + first + i) = v;
      values[i] = v.x;
      values[i + 1] = v.y;
      values[i + 2] = v.z;
      values[i + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      values[i] = silu_times(gate[first + i], up[first + i]);
      out[first + i] = values[i];
    }
  }
  quantize_block_values<kBlock>(values, row, block % per_row, lane, quant);
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
  if (wide && vec4 && cols / 4 <= static_cast<int64_t>(kRowThreads) * kRowPieces) {
    const auto grid = static_cast<unsigned>(rows);
    switch (q_block) {
      case 32:
        (void)gpu::launch(add_norm_row_kernel<32>, grid, kRowThreads, 0, stream, args);
        break;
      case 256:
        (void)gpu::launch(add_norm_row_kernel<256>, grid, kRowThreads, 0, stream, args);
        break;
      default:
        (void)gpu::launch(add_norm_row_kernel<0>, grid, kRowThreads, 0, stream, args);
        break;
    }
  } else if (wide && vec4) {
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
  if (quant.q8k && aligned16(gate) && aligned16(up) && aligned16(out)) {
    (void)gpu::launch(swiglu_quant_kernel<256, true>, grid, kThreads, 0, stream, gate, up, rows, cols, out, quant);
  } else if (quant.q8k) {
    (void)gpu::launch(swiglu_quant_kernel<256, false>, grid, kThreads, 0, stream, gate, up, rows, cols, out, quant);
  } else {
    (void)gpu::launch(swiglu_quant_kernel<32, false>, grid, kThreads, 0, stream, gate, up, rows, cols, out, quant);
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "swiglu_quant(rows=" + std::to_string(rows) + ")");
  return {};
}

bool qk_norm_rope_supports(int64_t head_dim) { return head_dim % 8 == 0 && head_dim / 4 <= gpu::group_lanes; }

Status qk_norm_rope(const QkNormRopeArgs& args, gpu::stream_t stream) {
  if (!qk_norm_rope_supports(args.head_dim)) {
    return Error{"qk_norm_rope: head_dim " + std::to_string(args.head_dim) + " is not a multiple of 8 up to 128"};
  }
  const bool store = args.kv.k != nullptr;
  const int64_t segments = args.rows * (args.n_head + args.n_head_kv * (store ? 2 : 1));
  if (store && (args.kv.n_embd_kv != args.n_head_kv * args.head_dim || args.seq_ids == nullptr || args.v == nullptr)) {
    return Error{"qk_norm_rope: the KV store does not fit " + std::to_string(args.n_head_kv) + " heads of " +
                 std::to_string(args.head_dim)};
  }
  if (segments == 0) return {};
  if (args.angles == nullptr || args.positions == nullptr) return Error{"qk_norm_rope: no angles or positions"};
  for (const void* p :
       {static_cast<const void*>(args.q), static_cast<const void*>(args.k), static_cast<const void*>(args.q_norm),
        static_cast<const void*>(args.k_norm), static_cast<const void*>(args.q_normed),
        static_cast<const void*>(args.k_normed), static_cast<const void*>(args.q_out),
        static_cast<const void*>(args.k_out), static_cast<const void*>(args.v), static_cast<const void*>(args.angles),
        static_cast<const void*>(args.kv.k), static_cast<const void*>(args.kv.v)}) {
    if (!aligned16(p)) return Error{"qk_norm_rope: a buffer is not 16-byte aligned"};
  }
  constexpr int64_t kPerBlock = kThreads / gpu::group_lanes;
  (void)gpu::launch(qk_norm_rope_kernel, static_cast<unsigned>((segments + kPerBlock - 1) / kPerBlock), kThreads, 0,
                    stream, args);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "qk_norm_rope(rows=" + std::to_string(args.rows) + ")");
  return {};
}

}  // namespace gufo::cuda
