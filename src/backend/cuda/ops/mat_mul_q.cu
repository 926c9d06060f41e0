// Integer matmul for quantized weights (Q8_0, Q4_K, Q5_K, Q6_K) against quantized
// activations (ops.h, QuantActs), in the CPU's accumulation order, so every output is bit for
// bit the CPU's (backend/cpu/quant/dot_kernels.h, "Accumulation order"):
//   for each super-block b in order:  S, M = exact int32 sums;  acc = chain(acc, b, S, M)
// The integer sums may be split any way (they are exact); only the float chain is ordered.
// Up to 8 activation rows (decode) go to mat_vec_q.cu, laid out for bandwidth, and more than
// 32 to mat_mul_q_staged.cu where the device has cp.async (these tiles remain for HIP builds);
// the same bits.
// Tiles: a lane group computes 16 weight rows x 8 activation rows per MMA (weights are the
// MMA's A operand, padding columns where a batch is short); warps of a block may split the super-blocks between
// them (kWarpsK > 1, for small batches) and hand the integer sums to warp 0, which runs the
// chain in order. Without MMA (HIP builds) each lane computes its fragment's sums with dp4a
// style loops: the same integers, so the same results.
// Tested by tests/ops/mat_mul_test.cpp (against the CPU, bit for bit, many shapes).
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/expert_block.cuh"
#include "backend/cuda/ops/mat_vec_q.cuh"
#include "backend/cuda/ops/mma_s8.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/quant_traits.cuh"

namespace gufo::cuda {
namespace {

using Args = QuantMatMulArgs;

// The activation quad (4 int8) of activation row `row` at element k.
__device__ inline uint32_t act_quad(const QuantActs& x, int64_t row, int64_t k) {
  return *reinterpret_cast<const uint32_t*>(x.qs + row * x.k + k);
}

// Where a lane reads and writes: its weight rows (clamped for loads), the activation row of
// its B-fragment column and of its C columns.
template <int kRm, int kTn>
struct LaneRows {
  int64_t w[kRm][2];
  int64_t b[kTn];
  int64_t c[kTn][2];
};

// Chunk c (32 elements) of super-block sb: each element's integer sum += the chunk's scale
// times its product, through MMA fragments or, without MMA, per lane.
template <class T, int kRm, int kTn>
__device__ __forceinline__ void add_chunk(const Args& args, const LaneRows<kRm, kTn>& rows,
                                          const typename T::RowBlock (&rb)[kRm][2], int64_t sb, int c, int t,
                                          int (&s)[kRm * kTn * 4]) {
  const int64_t k0 = sb * T::kSuperBlock + c * 32;
  if constexpr (gpu::has_mma()) {
    uint32_t a[kRm][4];
#pragma unroll
    for (int rm = 0; rm < kRm; ++rm) {
      a[rm][0] = T::quad(args.w, rows.w[rm][0], sb, c, 4 * t);
      a[rm][1] = T::quad(args.w, rows.w[rm][1], sb, c, 4 * t);
      a[rm][2] = T::quad(args.w, rows.w[rm][0], sb, c, 16 + 4 * t);
      a[rm][3] = T::quad(args.w, rows.w[rm][1], sb, c, 16 + 4 * t);
    }
    uint32_t b[kTn][2];
#pragma unroll
    for (int tn = 0; tn < kTn; ++tn) {
      b[tn][0] = act_quad(args.x, rows.b[tn], k0 + 4 * t);
      b[tn][1] = act_quad(args.x, rows.b[tn], k0 + 16 + 4 * t);
    }
    add_scaled_products<T, kRm, kTn>(a, b, rb, c, s);
  } else {
    // The same integers without MMA: each lane walks its own fragment's rows.
    for_each_element<kRm, kTn>([&](int rm, int tn, int i, int e) {
      const int64_t wrow = rows.w[rm][i / 2];
      const int64_t xrow = rows.c[tn][i % 2];
      int lo = 0, hi = 0;
      for (int kk = 0; kk < 16; kk += 4) {
        lo = dot4(T::quad(args.w, wrow, sb, c, kk), act_quad(args.x, xrow, k0 + kk), lo);
        hi = dot4(T::quad(args.w, wrow, sb, c, 16 + kk), act_quad(args.x, xrow, k0 + 16 + kk), hi);
      }
      s[e] += T::scale(rb[rm][i / 2], c, 0) * lo + T::scale(rb[rm][i / 2], c, 1) * hi;
    });
  }
}

// The integer sums S (and Q4_K/Q5_K's M) of super-block sb for every element of the lane.
template <class T, int kRm, int kTn>
__device__ __forceinline__ void super_block_sums(const Args& args, const LaneRows<kRm, kTn>& rows,
                                                 const typename T::RowBlock (&rb)[kRm][2], int64_t sb, int t,
                                                 int (&s)[kRm * kTn * 4], int (&m)[kRm * kTn * 4]) {
  if constexpr (gpu::has_mma()) {
#pragma unroll
    for (int c = 0; c < T::kChunks; ++c) add_chunk<T, kRm, kTn>(args, rows, rb, sb, c, t, s);
  } else {
    // NOTE(mat_mul_q): rolled without MMA: each lane's loops over the fragment unrolled in
    // every chunk (8 for the K-quants) made this one file take 19 minutes of clang for the two
    // AMD targets, most of CI's HIP compile.
#pragma unroll 1
    for (int c = 0; c < T::kChunks; ++c) add_chunk<T, kRm, kTn>(args, rows, rb, sb, c, t, s);
  }
  if constexpr (T::kMins) {
    for_each_element<kRm, kTn>([&](int rm, int tn, int i, int e) {
      const int32_t* sums = args.x.sum32 + rows.c[tn][i % 2] * (args.x.k / 32) + sb * 8;
      int total = 0;
#pragma unroll
      for (int sub = 0; sub < 8; ++sub) total += T::min(rb[rm][i / 2], sub) * sums[sub];
      m[e] = total;
    });
  }
}

// One chain step of super-block sb for every element (the CPU's float step, in order).
template <class T, int kRm, int kTn>
__device__ __forceinline__ void chain(const Args& args, const LaneRows<kRm, kTn>& rows,
                                      const typename T::RowBlock (&rb)[kRm][2], int64_t sb, int64_t n_sb, const int* s,
                                      const int* m, float (&acc)[kRm * kTn * 4]) {
  for_each_element<kRm, kTn>([&](int rm, int tn, int i, int e) {
    // NOTE(mat_mul_q): a weight super-block is one activation block (32 for Q8_0, 256 for the
    // K-quants), so the activation scale of super-block sb is d[row][sb].
    const float dx = args.x.d[rows.c[tn][i % 2] * n_sb + sb];
    acc[e] = chain_block<T>(acc[e], rb[rm][i / 2].d, rb[rm][i / 2].dmin, dx, s[e], m[e]);
  });
}

template <class T, int kRm, int kTn, int kWr, int kWt, int kWk>
__global__ void __launch_bounds__(32 * kWr * kWt * kWk) mat_mul_q_kernel(Args args) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  constexpr int kElems = kRm * kTn * 4;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int wk = warp % kWk;
  const int wt = (warp / kWk) % kWt;
  const int wr = warp / (kWk * kWt);
  const int g = lane / 4;
  const int t = lane % 4;

  // The activation (and output) rows this block covers, and the weight rows' offset.
  int64_t x_begin = 0, x_end = args.x.rows, n_rows = args.w.rows, w_offset = 0;
  if (args.experts.offsets != nullptr) {
    const int e = block_expert(args.experts);
    if (e < 0) return;  // the whole block: no barrier is skipped by part of it
    x_begin = args.experts.offsets[e];
    x_end = args.experts.offsets[e + 1];
    n_rows = args.w.rows_per_expert;
    w_offset = static_cast<int64_t>(e) * args.w.rows_per_expert;
  }
  const int64_t block_tok0 = x_begin + static_cast<int64_t>(blockIdx.y) * (kWt * kTn * 8);
  if (block_tok0 >= x_end) return;  // the whole block: no barrier is skipped by part of it
  const int64_t tok0 = block_tok0 + static_cast<int64_t>(wt) * kTn * 8;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kWr + wr) * kRm * 16;
  const int64_t n_sb = args.x.k / T::kSuperBlock;

  LaneRows<kRm, kTn> rows;
  for_each_element<kRm, 1>([&](int rm, int, int i, int) {
    if (i % 2 == 0) {
      const int64_t r = row0 + rm * 16 + g + 8 * (i / 2);
      rows.w[rm][i / 2] = w_offset + (r < n_rows ? r : n_rows - 1);
    }
  });
  const auto x_row = [&](int64_t tok) {
    const int64_t j = tok < x_end ? tok : x_end - 1;
    return args.experts.x_rows != nullptr ? static_cast<int64_t>(args.experts.x_rows[j]) : j;
  };
#pragma unroll
  for (int tn = 0; tn < kTn; ++tn) {
    rows.b[tn] = x_row(tok0 + tn * 8 + g);
    rows.c[tn][0] = x_row(tok0 + tn * 8 + 2 * t);
    rows.c[tn][1] = x_row(tok0 + tn * 8 + 2 * t + 1);
  }

  float acc[kElems];
#pragma unroll
  for (int e = 0; e < kElems; ++e) acc[e] = 0.0f;
  extern __shared__ int exchange[];  // [kWk][32][2 * kElems] when kWk > 1

  for (int64_t sb0 = 0; sb0 < n_sb; sb0 += kWk) {
    const int64_t sb = sb0 + wk;
    int s[kElems], m[kElems];
#pragma unroll
    for (int e = 0; e < kElems; ++e) s[e] = m[e] = 0;
    typename T::RowBlock rb[kRm][2];
    if (sb < n_sb) {
#pragma unroll
      for (int rm = 0; rm < kRm; ++rm) {
        rb[rm][0] = T::row_block(args.w, rows.w[rm][0], sb);
        rb[rm][1] = T::row_block(args.w, rows.w[rm][1], sb);
      }
      super_block_sums<T, kRm, kTn>(args, rows, rb, sb, t, s, m);
    }
    if constexpr (kWk == 1) {
      chain<T, kRm, kTn>(args, rows, rb, sb, n_sb, s, m, acc);
    } else {
      // Warps hand their integer sums to warp 0, which chains the super-blocks in order.
      int* mine = exchange + (wk * 32 + lane) * 2 * kElems;
#pragma unroll
      for (int e = 0; e < kElems; ++e) {
        mine[e] = s[e];
        mine[kElems + e] = m[e];
      }
      __syncthreads();
      if (wk == 0) {
        for (int j = 0; j < kWk && sb0 + j < n_sb; ++j) {
          const int* theirs = exchange + (j * 32 + lane) * 2 * kElems;
          typename T::RowBlock rbj[kRm][2];
#pragma unroll
          for (int rm = 0; rm < kRm; ++rm) {
            rbj[rm][0] = T::row_block(args.w, rows.w[rm][0], sb0 + j);
            rbj[rm][1] = T::row_block(args.w, rows.w[rm][1], sb0 + j);
          }
          chain<T, kRm, kTn>(args, rows, rbj, sb0 + j, n_sb, theirs, theirs + kElems, acc);
        }
      }
      __syncthreads();
    }
  }
  if (wk != 0) return;
  for_each_element<kRm, kTn>([&](int rm, int tn, int i, int e) {
    const int64_t r = row0 + rm * 16 + g + 8 * (i / 2);
    const int64_t tok = tok0 + tn * 8 + 2 * t + (i % 2);
    if (r < n_rows && tok < x_end) args.out[tok * args.ldo + r] = acc[e];
  });
}

template <int kRm, int kTn, int kWr, int kWt, int kWk>
struct Config {
  static constexpr int rows = 16 * kRm * kWr;
  static constexpr int tokens = 8 * kTn * kWt;
  static constexpr int threads = 32 * kWr * kWt * kWk;
  static constexpr size_t smem = kWk > 1 ? static_cast<size_t>(kWk) * 32 * 2 * kRm* kTn * 4 * sizeof(int) : 0;

  template <class T>
  static void launch(const Args& args, int64_t n_rows, int64_t n_tokens, int64_t n_expert, gpu::stream_t stream) {
    const dim3 grid(static_cast<unsigned>((n_rows + rows - 1) / rows),
                    static_cast<unsigned>((n_tokens + tokens - 1) / tokens), static_cast<unsigned>(n_expert));
    (void)gpu::launch(mat_mul_q_kernel<T, kRm, kTn, kWr, kWt, kWk>, grid, threads, smem, stream, args);
  }
};

// NOTE(mat_mul_q): two tilings, computing the same numbers (and those of mat_vec_q.cu, which
// takes up to 8 activation rows): up to 32 rows one 16 x 32 tile per block with 4 warps
// splitting the super-blocks; beyond, 64 x 64 per block of 4 warps, each 32 x 32 (prefill).
using SmallBatchConfig = Config<1, 4, 1, 1, 4>;
using PrefillConfig = Config<2, 4, 2, 2, 1>;

// Past this many activation rows, mat_mul_q_staged.cu's staged tiles take over where the
// device has them (the PrefillConfig tiles remain for HIP builds).
constexpr int64_t kSmallBatchTokens = 32;

template <class T>
void launch_for_type(const Args& args, int64_t n_rows, int64_t n_tokens, int64_t n_expert, gpu::stream_t stream) {
  if (n_tokens <= kSmallBatchTokens) {
    SmallBatchConfig::launch<T>(args, n_rows, n_tokens, n_expert, stream);
  } else {
    PrefillConfig::launch<T>(args, n_rows, n_tokens, n_expert, stream);
  }
}

}  // namespace

bool is_quantized_matmul_type(DType type) {
  return type == DType::Q8_0 || type == DType::Q4_K || type == DType::Q5_K || type == DType::Q6_K;
}

bool wants_q8k(DType type) { return type == DType::Q4_K || type == DType::Q5_K || type == DType::Q6_K; }

namespace {

// Why the integer matmul cannot multiply x with w, or null when it can.
const char* misfit(const WeightView& w, const QuantActs& x) {
  if (!is_quantized_matmul_type(w.type)) return "not a quantized type";
  if (x.k != w.cols || x.q8k != wants_q8k(w.type)) return "activations do not fit the weight";
  if (w.cols % (wants_q8k(w.type) ? 256 : 32) != 0) return "width is not a multiple of the block";
  // The K-quants' kernels read the 32-sums, the prefill tiles their split bytes (quant_acts_at).
  if (x.q8k && (x.sum32 == nullptr || x.sum_parts == nullptr)) return "activations lack their 32-sums";
  return nullptr;
}

}  // namespace

Status mat_mul_q(const WeightView& w, const QuantActs& x, float* out, int64_t ldo, const ExpertRows* experts,
                 gpu::stream_t stream) {
  const std::string context = "mat_mul_q(" + std::string(dtype_name(w.type)) + ", " + std::to_string(w.rows) + "x" +
                              std::to_string(w.cols) + ", " + std::to_string(x.rows) + " rows)";
  if (const char* why = misfit(w, x)) return Error{context + ": " + why};
  const int64_t n_rows = experts != nullptr ? w.rows_per_expert : w.rows;
  const int64_t n_tokens = experts != nullptr ? experts->max_rows : x.rows;
  const int64_t n_expert = experts != nullptr ? expert_grid(*experts) : 1;
  if (x.rows == 0 || w.rows == 0 || n_tokens == 0) return {};
  if (mat_vec_q_fits(x, experts)) {
    const Status s = mat_vec_q({w, x, out, ldo, experts != nullptr ? *experts : ExpertRows{}}, stream);
    if (!s.ok()) return Error{context + ": " + s.error().message, s.error().kind};
    return {};
  }
  if (n_tokens > kSmallBatchTokens && current_device_has_mma()) {
    const Status s = mat_mul_q_staged({w, x, out, ldo, experts != nullptr ? *experts : ExpertRows{}}, n_tokens, stream);
    if (!s.ok()) return Error{context + ": " + s.error().message, s.error().kind};
    return {};
  }
  Args args{w, x, out, ldo, experts != nullptr ? *experts : ExpertRows{}};
  switch (w.type) {
    case DType::Q8_0:
      launch_for_type<TraitsQ8_0>(args, n_rows, n_tokens, n_expert, stream);
      break;
    case DType::Q4_K:
      launch_for_type<TraitsQ4K>(args, n_rows, n_tokens, n_expert, stream);
      break;
    case DType::Q5_K:
      launch_for_type<TraitsQ5K>(args, n_rows, n_tokens, n_expert, stream);
      break;
    default:
      launch_for_type<TraitsQ6K>(args, n_rows, n_tokens, n_expert, stream);
      break;
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context);
  return {};
}

Status mat_mul_q_parts(const MatMulPart* parts, int n_parts, const QuantActs& x, const ExpertRows* experts,
                       gpu::stream_t stream) {
  if (n_parts < 1 || n_parts > kMaxMatMulParts) {
    return Error{"mat_mul_q_parts: 1 to " + std::to_string(kMaxMatMulParts) + " weights"};
  }
  bool one_launch = mat_vec_q_fits(x, experts) && x.rows > 0;
  for (int i = 0; i < n_parts; ++i) {
    const WeightView& w = *parts[i].w;
    // Anything mat_mul_q would refuse goes to it, and is refused there.
    one_launch = one_launch && w.type == parts[0].w->type && w.rows > 0 && misfit(w, x) == nullptr;
  }
  if (!one_launch) {
    for (int i = 0; i < n_parts; ++i) {
      GUFO_RETURN_IF_ERROR(mat_mul_q(*parts[i].w, x, parts[i].out, parts[i].ldo, experts, stream));
    }
    return {};
  }
  MatVecPart more[kMaxMatMulParts - 1];
  for (int i = 1; i < n_parts; ++i) more[i - 1] = {*parts[i].w, parts[i].out, parts[i].ldo};
  const Status s =
      mat_vec_q_parts({*parts[0].w, x, parts[0].out, parts[0].ldo, experts != nullptr ? *experts : ExpertRows{}}, more,
                      n_parts - 1, stream);
  if (!s.ok()) return Error{"mat_mul_q_parts: " + s.error().message, s.error().kind};
  return {};
}

}  // namespace gufo::cuda
