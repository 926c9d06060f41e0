// Integer matmul for up to 8 activation rows (decode and small batches), in the CPU's
// accumulation order like mat_mul_q.cu, so the same bits: S and M of each super-block are
// exact integer sums, then the float chain runs over the super-blocks in ascending order.
// The work is split for bandwidth rather than reuse: kLanes lanes share a weight row, lane l
// computing the integer sums of super-blocks l*kPerLane.. of each round with 16-byte loads
// (a Q4_K super-block is nine of them), and the chain walks the round's super-blocks in order,
// taking each lane's sums and scales by shuffles. Every lane runs the same shuffles.
// Tested by tests/ops/mat_mul_test.cpp (against the CPU, bit for bit).
#include <cstdlib>
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/mat_vec_q.cuh"
#include "backend/cuda/quant_traits.cuh"

namespace gufo::cuda {
namespace {

constexpr int kMaxRows = 8;
constexpr int kWarps = 4;

struct Words8 {
  uint32_t w[8];
};

// 32 consecutive bytes as 8 words (two 16-byte loads).
__device__ inline Words8 load32(const void* p) {
  const uint4 a = reinterpret_cast<const uint4*>(p)[0];
  const uint4 b = reinterpret_cast<const uint4*>(p)[1];
  return {{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}

__device__ inline int dot32(const Words8& q, const Words8& x) {
  int s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = dot4(q.w[i], x.w[i], s);
  return s;
}
// The two 16-element halves separately (Q6_K's scales are per 16).
__device__ inline void dot32_halves(const Words8& q, const Words8& x, int& lo, int& hi) {
  lo = hi = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) lo = dot4(q.w[i], x.w[i], lo);
#pragma unroll
  for (int i = 4; i < 8; ++i) hi = dot4(q.w[i], x.w[i], hi);
}

// The exact integer sums of super-block sb of weight row `row` against activation rows xr:
// s (the scaled quant products) and m (Q4_K/Q5_K's mins times the activation sums), and the
// block's float scales. The weights are loaded and unpacked once for all rows.
template <class T>
struct UnitDot;

template <>
struct UnitDot<TraitsQ8_0> {
  template <int kRows>
  __device__ static void run(const WeightView& w, int64_t row, int64_t sb, const QuantActs& x,
                             const int64_t (&xr)[kRows], int (&s)[kRows], int (&m)[kRows], float& dw, float& dmin) {
    const Words8 q = load32(weight_row(w, row) + sb * 32);
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      s[t] = dot32(q, load32(x.qs + xr[t] * x.k + sb * 32));
      m[t] = 0;
    }
    const TraitsQ8_0::RowBlock rb = TraitsQ8_0::row_block(w, row, sb);
    dw = rb.d;
    dmin = rb.dmin;
  }
};

template <class Block, bool kFifthBit>
struct UnitDot<TraitsQ45K<Block, kFifthBit>> {
  using T = TraitsQ45K<Block, kFifthBit>;
  template <int kRows>
  __device__ static void run(const WeightView& w, int64_t row, int64_t sb, const QuantActs& x,
                             const int64_t (&xr)[kRows], int (&s)[kRows], int (&m)[kRows], float& dw, float& dmin) {
    const Block* b = T::block(w, row, sb);
    const typename T::RowBlock rb = T::row_block(w, row, sb);
    Words8 high{};
    if constexpr (kFifthBit) high = load32(b->qh);
#pragma unroll
    for (int t = 0; t < kRows; ++t) s[t] = 0;
#pragma unroll
    for (int pair = 0; pair < 4; ++pair) {
      const Words8 packed = load32(b->qs + pair * 32);
#pragma unroll
      for (int nibble = 0; nibble < 2; ++nibble) {
        const int c = 2 * pair + nibble;
        Words8 q;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          q.w[i] = (packed.w[i] >> (4 * nibble)) & 0x0f0f0f0fu;
          if constexpr (kFifthBit) q.w[i] |= ((high.w[i] >> c) & 0x01010101u) << 4;
        }
#pragma unroll
        for (int t = 0; t < kRows; ++t) s[t] += rb.sc[c] * dot32(q, load32(x.qs + xr[t] * x.k + sb * 256 + c * 32));
      }
    }
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      const int32_t* sums = x.sum32 + xr[t] * (x.k / 32) + sb * 8;
      m[t] = 0;
#pragma unroll
      for (int c = 0; c < 8; ++c) m[t] += rb.mn[c] * sums[c];
    }
    dw = rb.d;
    dmin = rb.dmin;
  }
};

template <>
struct UnitDot<TraitsQ6K> {
  template <int kRows>
  __device__ static void run(const WeightView& w, int64_t row, int64_t sb, const QuantActs& x,
                             const int64_t (&xr)[kRows], int (&s)[kRows], int (&m)[kRows], float& dw, float& dmin) {
    const std::byte* base = weight_row(w, row) + sb * 192;
    const TraitsQ6K::RowBlock rb = TraitsQ6K::row_block(w, row, sb);
#pragma unroll
    for (int t = 0; t < kRows; ++t) s[t] = m[t] = 0;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const Words8 qh = load32(base + 128 + half * 32);
#pragma unroll
      for (int low_half = 0; low_half < 2; ++low_half) {
        const Words8 ql = load32(base + half * 64 + low_half * 32);
#pragma unroll
        for (int nibble = 0; nibble < 2; ++nibble) {
          const int quarter = 2 * nibble + low_half;  // quarter % 2 picks the ql run, quarter / 2 the nibble
          const int c = 4 * half + quarter;
          Words8 q;
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const uint32_t lo4 = (ql.w[i] >> (4 * nibble)) & 0x0f0f0f0fu;
            const uint32_t hi2 = (qh.w[i] >> (2 * quarter)) & 0x03030303u;
            q.w[i] = bytes_minus_32(lo4 | (hi2 << 4));
          }
#pragma unroll
          for (int t = 0; t < kRows; ++t) {
            int lo, hi;
            dot32_halves(q, load32(x.qs + xr[t] * x.k + sb * 256 + c * 32), lo, hi);
            s[t] += rb.sc[2 * c] * lo + rb.sc[2 * c + 1] * hi;
          }
        }
      }
    }
    dw = rb.d;
    dmin = rb.dmin;
  }
};

// blockIdx: x = rows of kWarps * (32 / kLanes), z = expert (expert mode).
template <class T, int kLanes, int kPerLane, int kRows>
__global__ void __launch_bounds__(32 * kWarps) mat_vec_q_kernel(MatVecArgs a) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int sub = lane % kLanes;
  const int leader = lane - sub;
  int64_t x_begin = 0, x_end = a.x.rows, n_rows = a.w.rows, w_offset = 0;
  if (a.experts.offsets != nullptr) {
    const int e = static_cast<int>(blockIdx.z);
    x_begin = a.experts.offsets[e];
    x_end = a.experts.offsets[e + 1];
    if (x_begin >= x_end) return;
    n_rows = a.w.rows_per_expert;
    w_offset = static_cast<int64_t>(e) * a.w.rows_per_expert;
  }
  const int64_t r = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * (32 / kLanes) + lane / kLanes;
  const int64_t row = w_offset + (r < n_rows ? r : n_rows - 1);
  int64_t xr[kRows];
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    const int64_t j = x_begin + t < x_end ? x_begin + t : x_end - 1;
    xr[t] = a.experts.x_rows != nullptr ? static_cast<int64_t>(a.experts.x_rows[j]) : j;
  }
  const int64_t n_units = a.x.k / T::kSuperBlock;
  constexpr int kRound = kLanes * kPerLane;
  float acc[kRows];
#pragma unroll
  for (int t = 0; t < kRows; ++t) acc[t] = 0.0f;
  for (int64_t u0 = 0; u0 < n_units; u0 += kRound) {
    int s[kPerLane][kRows], m[kPerLane][kRows];
    float dw[kPerLane], dmin[kPerLane];
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int64_t u = u0 + sub * kPerLane + k;
      UnitDot<T>::run(a.w, row, u < n_units ? u : n_units - 1, a.x, xr, s[k], m[k], dw[k], dmin[k]);
    }
    // The chain, in super-block order: lane j's units come j-th.
    for (int j = 0; j < kLanes; ++j) {
#pragma unroll
      for (int k = 0; k < kPerLane; ++k) {
        const int64_t u = u0 + j * kPerLane + k;
        const float dw_j = gpu::shfl(dw[k], leader + j);
        const float dmin_j = gpu::shfl(dmin[k], leader + j);
#pragma unroll
        for (int t = 0; t < kRows; ++t) {
          const int s_j = gpu::shfl(s[k][t], leader + j);
          const int m_j = gpu::shfl(m[k][t], leader + j);
          if (u < n_units) acc[t] = T::chain(acc[t], dw_j, dmin_j, a.x.d[xr[t] * n_units + u], s_j, m_j);
        }
      }
    }
  }
  if (sub != 0 || r >= n_rows) return;
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    if (x_begin + t < x_end) a.out[(x_begin + t) * a.ldo + r] = acc[t];
  }
}

template <class T, int kLanes, int kPerLane>
void launch_rows(const MatVecArgs& a, int64_t n_rows, int64_t n_tokens, int64_t n_expert, gpu::stream_t stream) {
  constexpr int kRowsPerBlock = kWarps * (32 / kLanes);
  const dim3 grid(static_cast<unsigned>((n_rows + kRowsPerBlock - 1) / kRowsPerBlock), 1,
                  static_cast<unsigned>(n_expert));
  switch (n_tokens) {
    case 1: mat_vec_q_kernel<T, kLanes, kPerLane, 1><<<grid, 32 * kWarps, 0, stream>>>(a); break;
    case 2: mat_vec_q_kernel<T, kLanes, kPerLane, 2><<<grid, 32 * kWarps, 0, stream>>>(a); break;
    case 3:
    case 4: mat_vec_q_kernel<T, kLanes, kPerLane, 4><<<grid, 32 * kWarps, 0, stream>>>(a); break;
    default: mat_vec_q_kernel<T, kLanes, kPerLane, 8><<<grid, 32 * kWarps, 0, stream>>>(a); break;
  }
}

// NOTE(mat_vec_q): lanes per row follow the super-blocks a row has, so that short rows
// (1.7B's 2048 = 8 Q4_K super-blocks) keep every lane busy; Q8_0 lanes take 4 blocks of 32
// per round (128 bytes, like a K-quant's 144) rather than one.
template <class T>
void launch_type(const MatVecArgs& a, int64_t n_rows, int64_t n_tokens, int64_t n_expert, gpu::stream_t stream) {
  constexpr int kPerLane = T::kSuperBlock == 32 ? 4 : 1;
  const int64_t units = a.x.k / T::kSuperBlock / kPerLane;
  if (units >= 32) {
    launch_rows<T, 32, kPerLane>(a, n_rows, n_tokens, n_expert, stream);
  } else if (units >= 16) {
    launch_rows<T, 16, kPerLane>(a, n_rows, n_tokens, n_expert, stream);
  } else {
    launch_rows<T, 8, kPerLane>(a, n_rows, n_tokens, n_expert, stream);
  }
}

}  // namespace

bool mat_vec_q_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("GUFO_CUDA_MATVEC");
    return value != nullptr && std::string(value) == "1";
  }();
  return enabled;
}

bool mat_vec_q_fits(const QuantActs& x, const ExpertRows* experts) {
  return (experts != nullptr ? experts->max_rows : x.rows) <= kMaxRows;
}

Status mat_vec_q(const MatVecArgs& args, gpu::stream_t stream) {
  const int64_t n_rows = args.experts.offsets != nullptr ? args.w.rows_per_expert : args.w.rows;
  const int64_t n_tokens = args.experts.offsets != nullptr ? args.experts.max_rows : args.x.rows;
  const int64_t n_expert = args.experts.offsets != nullptr ? args.experts.n_expert : 1;
  if (n_tokens < 1 || n_tokens > kMaxRows) return Error{"mat_vec_q: 1 to 8 activation rows"};
  switch (args.w.type) {
    case DType::Q8_0: launch_type<TraitsQ8_0>(args, n_rows, n_tokens, n_expert, stream); break;
    case DType::Q4_K: launch_type<TraitsQ4K>(args, n_rows, n_tokens, n_expert, stream); break;
    case DType::Q5_K: launch_type<TraitsQ5K>(args, n_rows, n_tokens, n_expert, stream); break;
    case DType::Q6_K: launch_type<TraitsQ6K>(args, n_rows, n_tokens, n_expert, stream); break;
    default: return Error{"mat_vec_q: not a quantized type"};
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "mat_vec_q(" + std::to_string(args.w.rows) + " rows)");
  return {};
}

}  // namespace gufo::cuda
