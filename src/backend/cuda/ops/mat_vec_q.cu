// Integer matmul for up to 8 activation rows (decode and small batches), in the CPU's
// accumulation order like mat_mul_q.cu, so the same bits: S and M of each super-block are
// exact integer sums, then the float chain runs over the super-blocks in ascending order.
// The work is laid out for bandwidth: a warp owns one weight row, and its lanes read the
// row's quants as consecutive 16-byte pieces (a lane group of LaneShare::kLanes lanes per
// super-block, 32 / kLanes super-blocks side by side), so each load instruction of the warp
// covers ~512 contiguous bytes. A lane's share of S and M is an exact integer; the group adds
// the shares by shuffles (integers: any order is exact), then every lane runs the chain over
// the round's super-blocks in order, taking each group's sums and scales by shuffles.
// NOTE(mat_vec_q): one weight row per warp. Two (sharing the activation loads) measured slower
// on the H200: tg128 of a Qwen3-8B shape 177 t/s against 191 (95 registers against 56, so
// fewer warps in flight); ncu showed both latency-bound, not at the DRAM roofline.
// Tested by tests/ops/mat_mul_test.cpp (against the CPU, bit for bit).
#include <cstddef>
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/expert_block.cuh"
#include "backend/cuda/ops/mat_vec_q.cuh"
#include "backend/cuda/quant_traits.cuh"

namespace gufo::cuda {
namespace {

constexpr int kMaxRows = 8;
constexpr int kWarps = 4;

__device__ inline uint4 load16(const void* p) { return *reinterpret_cast<const uint4*>(p); }

__device__ inline int dot16(const uint4& q, const uint4& x) {
  return dot4(q.w, x.w, dot4(q.z, x.z, dot4(q.y, x.y, dot4(q.x, x.x, 0))));
}

// f applied to each of the four words (bytewise unpacking of 16 quants).
template <class F>
__device__ inline uint4 map4(const uint4& v, F&& f) {
  return {f(v.x), f(v.y), f(v.z), f(v.w)};
}

// The 16 activation quants of row xr at element k.
__device__ inline uint4 acts16(const QuantActs& x, int64_t xr, int64_t k) { return load16(x.qs + xr * x.k + k); }

// A lane's exact share of super-block sb's S and M for each activation row, and the block's
// float scales (d, dmin: the same in every lane of the group).
template <class T>
struct LaneShare;

// Q8_0: two lanes per 32-block, 16 quants each.
template <>
struct LaneShare<TraitsQ8_0> {
  static constexpr int kLanes = 2;
  template <int kRows>
  __device__ static void run(const WeightView& w, int64_t row, int64_t sb, int sub, const QuantActs& x,
                             const int64_t (&xr)[kRows], int (&s)[kRows], int (&m)[kRows], float& d, float& dmin) {
    const uint4 q = load16(weight_row(w, row) + sb * 32 + sub * 16);
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      s[t] = dot16(q, acts16(x, xr[t], sb * 32 + sub * 16));
      m[t] = 0;
    }
    d = quant::fp16_to_fp32(w.d[row * w.d_per_row + sb]);
    dmin = 0.0f;
  }
};

// Byte i (0..11) of a K-quant block's packed scales, held in words y, z, w of its 16-byte
// header (x is d and dmin): register selects, so no per-lane index into memory.
__device__ inline uint32_t scale_byte(const uint4& header, int i) {
  const uint32_t word = i < 4 ? header.y : i < 8 ? header.z : header.w;
  return (word >> (8 * (i & 3))) & 0xffu;
}

// quant::unpack_scale_min_k4 over the header's registers.
__device__ inline void scale_min_k4(const uint4& header, int j, int& scale, int& min) {
  if (j < 4) {
    scale = static_cast<int>(scale_byte(header, j) & 63);
    min = static_cast<int>(scale_byte(header, j + 4) & 63);
  } else {
    const uint32_t hi = scale_byte(header, j + 4);
    scale = static_cast<int>((hi & 0x0f) | ((scale_byte(header, j - 4) >> 6) << 4));
    min = static_cast<int>((hi >> 4) | ((scale_byte(header, j) >> 6) << 4));
  }
}

// Q4_K and Q5_K: eight lanes per super-block; lane `sub` reads qs bytes sub*16.., which hold
// elements h*16.. (h = sub % 2) of sub-block 2p (low nibbles) and 2p + 1 (high), p = sub / 2.
// NOTE(mat_vec_q): d, dmin and the 12 scale bytes are the block's first 16 bytes: one load
// (the same address in the group's 8 lanes) rather than a load per byte, which left the
// kernel bound by load instructions rather than by DRAM.
template <class Block, bool kFifthBit>
struct LaneShare<TraitsQ45K<Block, kFifthBit>> {
  static constexpr int kLanes = 8;
  static_assert(offsetof(Block, scales) == 4 && sizeof(Block::scales) == 12 && sizeof(Block) % 16 == 0);
  template <int kRows>
  __device__ static void run(const WeightView& w, int64_t row, int64_t sb, int sub, const QuantActs& x,
                             const int64_t (&xr)[kRows], int (&s)[kRows], int (&m)[kRows], float& d, float& dmin) {
    const Block* b = reinterpret_cast<const Block*>(weight_row(w, row)) + sb;
    const int p = sub / 2, h = sub % 2;
    const uint4 header = load16(b);
    const uint4 packed = load16(b->qs + sub * 16);
    uint4 lo = map4(packed, [](uint32_t v) { return v & 0x0f0f0f0fu; });
    uint4 hi = map4(packed, [](uint32_t v) { return (v >> 4) & 0x0f0f0f0fu; });
    if constexpr (kFifthBit) {
      const uint4 high = load16(b->qh + h * 16);
      lo = {lo.x | (((high.x >> (2 * p)) & 0x01010101u) << 4), lo.y | (((high.y >> (2 * p)) & 0x01010101u) << 4),
            lo.z | (((high.z >> (2 * p)) & 0x01010101u) << 4), lo.w | (((high.w >> (2 * p)) & 0x01010101u) << 4)};
      hi = {hi.x | (((high.x >> (2 * p + 1)) & 0x01010101u) << 4), hi.y | (((high.y >> (2 * p + 1)) & 0x01010101u) << 4),
            hi.z | (((high.z >> (2 * p + 1)) & 0x01010101u) << 4), hi.w | (((high.w >> (2 * p + 1)) & 0x01010101u) << 4)};
    }
    int lo_scale, lo_min, hi_scale, hi_min;
    scale_min_k4(header, 2 * p, lo_scale, lo_min);
    scale_min_k4(header, 2 * p + 1, hi_scale, hi_min);
    const int64_t k0 = sb * 256 + 2 * p * 32 + h * 16;
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      s[t] = lo_scale * dot16(lo, acts16(x, xr[t], k0)) + hi_scale * dot16(hi, acts16(x, xr[t], k0 + 32));
      // The mins once per sub-block pair: the h == 0 lane adds them (the pair of sums is
      // 8-byte aligned: 2p is even and a row holds k / 32, a multiple of 8, sums).
      const int2 sums = *reinterpret_cast<const int2*>(x.sum32 + xr[t] * (x.k / 32) + sb * 8 + 2 * p);
      m[t] = h == 0 ? lo_min * sums.x + hi_min * sums.y : 0;
    }
    d = quant::fp16_to_fp32(static_cast<uint16_t>(header.x & 0xffffu));
    dmin = quant::fp16_to_fp32(static_cast<uint16_t>(header.x >> 16));
  }
};

// Q6_K (device layout, weight_view.h): eight lanes per super-block; lane `sub` reads ql bytes
// sub*16.. : half hh = sub / 4 of the super-block, quarter q = (sub / 2) % 2 in the low
// nibbles and q + 2 in the high ones, elements (sub % 2)*16.. of each 32-element chunk, whose
// high bits are qh bytes hh*32 + (sub % 2)*16.. (bits 2q..); scales per 16 elements.
template <>
struct LaneShare<TraitsQ6K> {
  static constexpr int kLanes = 8;
  template <int kRows>
  __device__ static void run(const WeightView& w, int64_t row, int64_t sb, int sub, const QuantActs& x,
                             const int64_t (&xr)[kRows], int (&s)[kRows], int (&m)[kRows], float& d, float& dmin) {
    const std::byte* base = weight_row(w, row) + sb * 192;
    const int hh = sub / 4, q = (sub / 2) % 2, h = sub % 2;
    const uint4 ql = load16(base + sub * 16);
    const uint4 qh = load16(base + 128 + hh * 32 + h * 16);
    const auto six = [](uint32_t low4, uint32_t high2) { return bytes_minus_32(low4 | (high2 << 4)); };
    const uint4 lo = {six(ql.x & 0x0f0f0f0fu, (qh.x >> (2 * q)) & 0x03030303u),
                      six(ql.y & 0x0f0f0f0fu, (qh.y >> (2 * q)) & 0x03030303u),
                      six(ql.z & 0x0f0f0f0fu, (qh.z >> (2 * q)) & 0x03030303u),
                      six(ql.w & 0x0f0f0f0fu, (qh.w >> (2 * q)) & 0x03030303u)};
    const uint4 hi = {six((ql.x >> 4) & 0x0f0f0f0fu, (qh.x >> (2 * q + 4)) & 0x03030303u),
                      six((ql.y >> 4) & 0x0f0f0f0fu, (qh.y >> (2 * q + 4)) & 0x03030303u),
                      six((ql.z >> 4) & 0x0f0f0f0fu, (qh.z >> (2 * q + 4)) & 0x03030303u),
                      six((ql.w >> 4) & 0x0f0f0f0fu, (qh.w >> (2 * q + 4)) & 0x03030303u)};
    const int c_lo = 4 * hh + q, c_hi = c_lo + 2;
    const int8_t* sc = w.scales + row * (w.d_per_row * 16) + sb * 16;
    const int sc_lo = sc[2 * c_lo + h], sc_hi = sc[2 * c_hi + h];
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      s[t] = sc_lo * dot16(lo, acts16(x, xr[t], sb * 256 + c_lo * 32 + h * 16)) +
             sc_hi * dot16(hi, acts16(x, xr[t], sb * 256 + c_hi * 32 + h * 16));
      m[t] = 0;
    }
    d = quant::fp16_to_fp32(w.d[row * w.d_per_row + sb]);
    dmin = 0.0f;
  }
};

// blockIdx: x = rows of kWarps (a warp per weight row), z = expert (expert mode).
template <class T, int kRows>
__global__ void __launch_bounds__(32 * kWarps) mat_vec_q_kernel(QuantMatMulArgs a) {
  using Share = LaneShare<T>;
  constexpr int kLanes = Share::kLanes;
  constexpr int kPerRound = 32 / kLanes;  // super-blocks side by side in one round
  // NOTE(mat_vec_q): rounds are unrolled so that several rounds' loads are in flight before
  // the first chain step waits on them; fewer with more activation rows (registers).
  constexpr int kUnroll = kRows <= 2 ? 4 : 2;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int sub = lane % kLanes;
  const int slot = lane / kLanes;
  int64_t x_begin = 0, x_end = a.x.rows, n_rows = a.w.rows, w_offset = 0;
  if (a.experts.offsets != nullptr) {
    const int e = block_expert(a.experts);
    if (e < 0) return;
    x_begin = a.experts.offsets[e];
    x_end = a.experts.offsets[e + 1];
    if (x_begin >= x_end) return;
    n_rows = a.w.rows_per_expert;
    w_offset = static_cast<int64_t>(e) * a.w.rows_per_expert;
  }
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (r >= n_rows) return;  // the whole warp; no block-wide barrier follows
  const int64_t row = w_offset + r;
  int64_t xr[kRows];
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    const int64_t j = x_begin + t < x_end ? x_begin + t : x_end - 1;
    xr[t] = a.experts.x_rows != nullptr ? static_cast<int64_t>(a.experts.x_rows[j]) : j;
  }
  const int64_t n_sb = a.x.k / T::kSuperBlock;
  float acc[kRows];
#pragma unroll
  for (int t = 0; t < kRows; ++t) acc[t] = 0.0f;
  for (int64_t sb0 = 0; sb0 < n_sb; sb0 += kPerRound * kUnroll) {
    int s[kUnroll][kRows], m[kUnroll][kRows];
    float d[kUnroll], dmin[kUnroll], dx[kUnroll][kRows];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t sb = sb0 + u * kPerRound + slot < n_sb ? sb0 + u * kPerRound + slot : n_sb - 1;
      Share::run(a.w, row, sb, sub, a.x, xr, s[u], m[u], d[u], dmin[u]);
      // NOTE(mat_vec_q): the activation scales are loaded here, with the quants, and reach the
      // chain by shuffles: a load inside the chain would wait once per super-block.
#pragma unroll
      for (int t = 0; t < kRows; ++t) dx[u][t] = a.x.d[xr[t] * n_sb + sb];
      // The group's shares added up: exact integers, so the order does not matter.
#pragma unroll
      for (int mask = 1; mask < kLanes; mask *= 2) {
#pragma unroll
        for (int t = 0; t < kRows; ++t) {
          s[u][t] += gpu::shfl_xor(s[u][t], mask);
          if constexpr (T::kMins) m[u][t] += gpu::shfl_xor(m[u][t], mask);
        }
      }
    }
    // The chain, in super-block order: group j of round u holds super-block sb0 + u*kPerRound + j.
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int j = 0; j < kPerRound; ++j) {
        const int64_t sb = sb0 + u * kPerRound + j;
        if (sb >= n_sb) break;  // the same in every lane
        const int src = j * kLanes;
        const float d_j = gpu::shfl(d[u], src);
        const float dmin_j = T::kMins ? gpu::shfl(dmin[u], src) : 0.0f;
#pragma unroll
        for (int t = 0; t < kRows; ++t) {
          const int s_j = gpu::shfl(s[u][t], src);
          const int m_j = T::kMins ? gpu::shfl(m[u][t], src) : 0;  // (no mins: m is 0)
          acc[t] = T::chain(acc[t], d_j, dmin_j, gpu::shfl(dx[u][t], src), s_j, m_j);
        }
      }
    }
  }
  if (lane != 0) return;
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    if (x_begin + t < x_end) a.out[(x_begin + t) * a.ldo + r] = acc[t];
  }
}

template <class T>
void launch_type(const QuantMatMulArgs& a, int64_t n_rows, int64_t n_tokens, int64_t n_expert, gpu::stream_t stream) {
  const dim3 grid(static_cast<unsigned>((n_rows + kWarps - 1) / kWarps), 1, static_cast<unsigned>(n_expert));
  switch (n_tokens) {
    case 1: mat_vec_q_kernel<T, 1><<<grid, 32 * kWarps, 0, stream>>>(a); break;
    case 2: mat_vec_q_kernel<T, 2><<<grid, 32 * kWarps, 0, stream>>>(a); break;
    case 3:
    case 4: mat_vec_q_kernel<T, 4><<<grid, 32 * kWarps, 0, stream>>>(a); break;
    default: mat_vec_q_kernel<T, 8><<<grid, 32 * kWarps, 0, stream>>>(a); break;
  }
}

}  // namespace

bool mat_vec_q_fits(const QuantActs& x, const ExpertRows* experts) {
  return (experts != nullptr ? experts->max_rows : x.rows) <= kMaxRows;
}

Status mat_vec_q(const QuantMatMulArgs& args, gpu::stream_t stream) {
  const int64_t n_rows = args.experts.offsets != nullptr ? args.w.rows_per_expert : args.w.rows;
  const int64_t n_tokens = args.experts.offsets != nullptr ? args.experts.max_rows : args.x.rows;
  const int64_t n_expert = args.experts.offsets != nullptr ? expert_grid(args.experts) : 1;
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
