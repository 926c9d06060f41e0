// Integer matmul for up to 8 activation rows (decode and small batches), in the CPU's
// accumulation order like mat_mul_q.cu, so the same bits: S and M of each super-block are
// exact integer sums, then the float chain runs over the super-blocks in ascending order.
// The work is laid out for bandwidth: a warp owns a weight row (mat_vec_q_kernel, or several
// side by side when they are shorter than a round; for one activation row,
// mat_vec_q_rows_kernel gives it several, one after the other, and mat_vec_q_split_kernel
// gives a block's warps two rows to share), and its lanes read the
// row's quants in 16-byte pieces (a lane group of LaneShare::kLanes lanes per super-block,
// 32 / kLanes super-blocks side by side), so a warp's loads cover ~1 KiB of the row at once.
// A lane's share of S and M is an exact integer; the group adds the shares by shuffles
// (integers: any order is exact), its first lane turns the sums into the super-block's
// ChainStep (quant_traits.cuh) and leaves it in shared memory, and one lane per weight row
// applies the steps in super-block order: two fused multiply-adds per super-block.
// NOTE(mat_vec_q): ncu on the 12288 x 4096 Q4_K matmul (H100) found the first version of this
// kernel bound by instructions issued (1,016 warp instructions per row, 58% of issue slots
// busy, 34% of DRAM bandwidth). Hence a K-quant lane reads 32 bytes of quants (one sub-block
// pair: its scales unpacked once, without branches), the chain takes its operands from shared
// memory rather than five shuffles per super-block, and loads go before arithmetic (LaneShare):
// 587 instructions per row, 19.8 -> 14.9 us (1.9 TB/s) in a CUDA graph.
// NOTE(mat_vec_q): two weight rows a warp computed together (sharing the activation loads)
// measured slower on the H200: tg128 of a Qwen3-8B shape 177 t/s against 191 (95 registers
// against 56, so fewer warps in flight). Rows one after the other, the next one's weights
// loading while this one is multiplied (mat_vec_q_rows_kernel), measured faster on an H100
// (session 16: 8B tg128 298.6 -> 319.2 t/s).
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
// Split layouts (row_layout): weight rows a block, and the launches' rows that take them.
constexpr int kSplitRows = 2;
constexpr int64_t kSplitFrom = 2048;
constexpr int64_t kSplitTo = 65536;

__device__ inline uint4 load16(const void* p) { return *reinterpret_cast<const uint4*>(p); }

__device__ inline int dot16(const uint4& q, const uint4& x) {
  return dot4(q.w, x.w, dot4(q.z, x.z, dot4(q.y, x.y, dot4(q.x, x.x, 0))));
}

// f applied to each of the four words (bytewise unpacking of 16 quants).
template <class F>
__device__ inline uint4 map4(const uint4& v, F&& f) {
  return {f(v.x), f(v.y), f(v.z), f(v.w)};
}

// The activation quants a lane multiplies with its share of a super-block: kPieces pieces of
// 16 bytes per activation row, at offsets the share names. For one or two rows (decode) they
// are loaded with the weights, before any arithmetic, so that a warp waits on memory once per
// round set; with more rows they would not fit in registers and are loaded where used.
template <int kRows, int kPieces>
struct LaneActs {
  static constexpr bool kPrefetch = kRows <= 2;
  uint4 v[kPrefetch ? kRows : 1][kPieces];
  int64_t k[kPieces];  // the pieces' offsets in an activation row

  __device__ void load(const QuantActs& x, const int64_t (&xr)[kRows]) {
    if constexpr (kPrefetch) {
#pragma unroll
      for (int t = 0; t < kRows; ++t) {
#pragma unroll
        for (int i = 0; i < kPieces; ++i) v[t][i] = load16(x.qs + xr[t] * x.k + k[i]);
      }
    }
  }
  __device__ uint4 get(const QuantActs& x, const int64_t (&xr)[kRows], int t, int i) const {
    if constexpr (kPrefetch) return v[t][i];
    return load16(x.qs + xr[t] * x.k + k[i]);
  }
};

// A lane's share of super-block sb, in two steps: load_weights() and load_acts() issue every
// load (the weight row's and the activations') and compute() makes the lane's exact share of
// S and M for each activation row and the block's float scales (d, dmin: the same in every
// lane of the group). The activations are loaded apart so that mat_vec_q_rows_kernel can
// keep them across weight rows.
// NOTE(mat_vec_q): the split is what keeps a warp's loads in flight together: with loads and
// arithmetic interleaved, the compiler issued the activation loads after the branches of
// the scale unpacking, and the next super-block's after this one's shuffles: five round trips
// to memory per row, and the kernel stalled on them (ncu: long scoreboard, 10 of 16 cycles
// per instruction).
template <class T>
struct LaneShare;

// Q8_0: two lanes per 32-block, 16 quants each.
template <>
struct LaneShare<TraitsQ8_0> {
  static constexpr int kLanes = 2;
  template <int kRows>
  struct Loaded {
    uint4 q;
    uint16_t d;
    LaneActs<kRows, 1> acts;
  };
  template <int kRows>
  __device__ static void load_weights(const WeightView& w, int64_t row, int64_t sb, int sub, Loaded<kRows>& l) {
    l.q = load16(weight_row(w, row) + sb * 32 + sub * 16);
    l.d = w.d[row * w.d_per_row + sb];
  }
  template <int kRows>
  __device__ static void load_acts(int64_t sb, int sub, const QuantActs& x, const int64_t (&xr)[kRows],
                                   Loaded<kRows>& l) {
    l.acts.k[0] = sb * 32 + sub * 16;
    l.acts.load(x, xr);
  }
  template <int kRows>
  __device__ static void compute(const Loaded<kRows>& l, int /*sub*/, const QuantActs& x, const int64_t (&xr)[kRows],
                                 int (&s)[kRows], int (&m)[kRows], float& d, float& dmin) {
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      s[t] = dot16(l.q, l.acts.get(x, xr, t, 0));
      m[t] = 0;
    }
    d = quant::fp16_to_fp32(l.d);
    dmin = 0.0f;
  }
};

// The scales and mins of sub-blocks 2p (lo) and 2p + 1 (hi) of a K-quant block, from the
// words y, z, w of its 16-byte header (x is d and dmin): quant::unpack_scale_min_k4 over
// registers, without branches. Bytes 2p % 4 and 2p % 4 + 1 of each word are the pair's; the
// first four sub-blocks take 6 bits of y (scales) and z (mins), the last four 4 bits of w
// and the top 2 bits of y and z.
__device__ inline void scale_min_pair(const uint4& header, int p, int& lo_scale, int& lo_min, int& hi_scale,
                                      int& hi_min) {
  const int shift = 16 * (p & 1);
  const uint32_t y = header.y >> shift, z = header.z >> shift, w = header.w >> shift;
  const bool first_half = p < 2;
  const uint32_t scales = first_half ? y & 0x3f3fu : (w & 0x0f0fu) | ((y >> 2) & 0x3030u);
  const uint32_t mins = first_half ? z & 0x3f3fu : ((w >> 4) & 0x0f0fu) | ((z >> 2) & 0x3030u);
  lo_scale = static_cast<int>(scales & 0xffu);
  hi_scale = static_cast<int>((scales >> 8) & 0xffu);
  lo_min = static_cast<int>(mins & 0xffu);
  hi_min = static_cast<int>((mins >> 8) & 0xffu);
}

// The low (lo) and high (hi) nibbles of 16 packed bytes, as bytes.
__device__ inline uint4 low_nibbles(const uint4& v) {
  return map4(v, [](uint32_t w) { return w & 0x0f0f0f0fu; });
}
__device__ inline uint4 high_nibbles(const uint4& v) {
  return map4(v, [](uint32_t w) { return (w >> 4) & 0x0f0f0f0fu; });
}

// Bit `bit` of each byte of v, moved to bit 4 (Q5_K's fifth bit), or-ed into q.
__device__ inline uint4 with_fifth_bit(const uint4& q, const uint4& v, int bit) {
  const auto fifth = [bit](uint32_t w) { return ((w >> bit) & 0x01010101u) << 4; };
  return {q.x | fifth(v.x), q.y | fifth(v.y), q.z | fifth(v.z), q.w | fifth(v.w)};
}

// Q4_K and Q5_K: four lanes per super-block; lane p reads qs bytes p*32 .. p*32 + 31, which
// hold sub-block 2p (low nibbles) and 2p + 1 (high), so it unpacks one pair of scales and mins
// and owns the pair's whole share of S and M: activations k0 .. k0 + 63, k0 = sb*256 + 64p.
// NOTE(mat_vec_q): d, dmin and the 12 scale bytes are the block's first 16 bytes: one load
// (the same address in the group's 4 lanes) rather than a load per byte.
template <class Block, bool kFifthBit>
struct LaneShare<TraitsQ45K<Block, kFifthBit>> {
  static constexpr int kLanes = 4;
  static_assert(offsetof(Block, scales) == 4 && sizeof(Block::scales) == 12 && sizeof(Block) % 16 == 0);
  template <int kRows>
  struct Loaded {
    uint4 header;
    uint4 packed[2];
    uint4 high[kFifthBit ? 2 : 1];
    int2 sums[kRows];
    LaneActs<kRows, 4> acts;
  };
  template <int kRows>
  __device__ static void load_weights(const WeightView& w, int64_t row, int64_t sb, int p, Loaded<kRows>& l) {
    const Block* b = reinterpret_cast<const Block*>(weight_row(w, row)) + sb;
    l.header = load16(b);
    l.packed[0] = load16(b->qs + p * 32);
    l.packed[1] = load16(b->qs + p * 32 + 16);
    if constexpr (kFifthBit) {
      l.high[0] = load16(b->qh);
      l.high[1] = load16(b->qh + 16);
    }
  }
  template <int kRows>
  __device__ static void load_acts(int64_t sb, int p, const QuantActs& x, const int64_t (&xr)[kRows],
                                   Loaded<kRows>& l) {
    // The pair's two 32-sums are 8-byte aligned: 2p is even and a row holds k / 32, a
    // multiple of 8, sums.
#pragma unroll
    for (int t = 0; t < kRows; ++t)
      l.sums[t] = *reinterpret_cast<const int2*>(x.sum32 + xr[t] * (x.k / 32) + sb * 8 + 2 * p);
#pragma unroll
    for (int i = 0; i < 4; ++i) l.acts.k[i] = sb * 256 + p * 64 + i * 16;
    l.acts.load(x, xr);
  }
  template <int kRows>
  __device__ static void compute(const Loaded<kRows>& l, int p, const QuantActs& x, const int64_t (&xr)[kRows],
                                 int (&s)[kRows], int (&m)[kRows], float& d, float& dmin) {
    uint4 lo[2], hi[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      lo[h] = low_nibbles(l.packed[h]);
      hi[h] = high_nibbles(l.packed[h]);
      if constexpr (kFifthBit) {
        lo[h] = with_fifth_bit(lo[h], l.high[h], 2 * p);
        hi[h] = with_fifth_bit(hi[h], l.high[h], 2 * p + 1);
      }
    }
    int lo_scale, lo_min, hi_scale, hi_min;
    scale_min_pair(l.header, p, lo_scale, lo_min, hi_scale, hi_min);
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      const int lo_dot = dot16(lo[1], l.acts.get(x, xr, t, 1)) + dot16(lo[0], l.acts.get(x, xr, t, 0));
      const int hi_dot = dot16(hi[1], l.acts.get(x, xr, t, 3)) + dot16(hi[0], l.acts.get(x, xr, t, 2));
      s[t] = lo_scale * lo_dot + hi_scale * hi_dot;
      m[t] = lo_min * l.sums[t].x + hi_min * l.sums[t].y;
    }
    d = quant::fp16_to_fp32(static_cast<uint16_t>(l.header.x & 0xffffu));
    dmin = quant::fp16_to_fp32(static_cast<uint16_t>(l.header.x >> 16));
  }
};

// Q6_K (device layout, weight_view.h): four lanes per super-block; lane `sub` reads ql bytes
// sub*32 .. sub*32 + 31: half hh = sub / 2 of the super-block, quarter q = sub % 2 in the low
// nibbles and q + 2 in the high ones, all 32 elements of each 32-element chunk (16-byte
// piece h holding elements h*16 ..), whose high bits are qh bytes hh*32 .. (bits 2q ..); the
// scales are per 16 elements, so per piece.
// NOTE(mat_vec_q): the quants stay 0..63 (a signed byte either way) and the offset of 32 goes
// through the activations: sum((q - 32) x) = sum(q x) + sum(-32 x), one more dp4a a word
// where subtracting 32 from each byte took three operations; both are exact integers, so S is
// the same. ncu on an H200 (session 18): 14% fewer instructions in the 4096 x 12288 down
// projection (25.5 -> 24.5 us) and the 151936-row output matvec (176 -> 163 us).
template <>
struct LaneShare<TraitsQ6K> {
  static constexpr int kLanes = 4;
  template <int kRows>
  struct Loaded {
    uint4 ql[2];
    uint4 qh[2];
    char2 sc_lo, sc_hi;  // the two 16-element scales of chunks c_lo and c_hi
    uint16_t d;
    LaneActs<kRows, 4> acts;
  };
  template <int kRows>
  __device__ static void load_weights(const WeightView& w, int64_t row, int64_t sb, int sub, Loaded<kRows>& l) {
    const std::byte* base = weight_row(w, row) + sb * 192;
    const int hh = sub / 2, q = sub % 2;
    l.ql[0] = load16(base + sub * 32);
    l.ql[1] = load16(base + sub * 32 + 16);
    l.qh[0] = load16(base + 128 + hh * 32);
    l.qh[1] = load16(base + 128 + hh * 32 + 16);
    const int c_lo = 4 * hh + q, c_hi = c_lo + 2;
    const int8_t* sc = w.scales + row * (w.d_per_row * 16) + sb * 16;
    l.sc_lo = *reinterpret_cast<const char2*>(sc + 2 * c_lo);
    l.sc_hi = *reinterpret_cast<const char2*>(sc + 2 * c_hi);
    l.d = w.d[row * w.d_per_row + sb];
  }
  template <int kRows>
  __device__ static void load_acts(int64_t sb, int sub, const QuantActs& x, const int64_t (&xr)[kRows],
                                   Loaded<kRows>& l) {
    const int c_lo = 4 * (sub / 2) + sub % 2, c_hi = c_lo + 2;
    l.acts.k[0] = sb * 256 + c_lo * 32;
    l.acts.k[1] = l.acts.k[0] + 16;
    l.acts.k[2] = sb * 256 + c_hi * 32;
    l.acts.k[3] = l.acts.k[2] + 16;
    l.acts.load(x, xr);
  }
  template <int kRows>
  __device__ static void compute(const Loaded<kRows>& l, int sub, const QuantActs& x, const int64_t (&xr)[kRows],
                                 int (&s)[kRows], int (&m)[kRows], float& d, float& dmin) {
    // qh bits 2q, 2q + 1 (low nibbles' quants) and 2q + 4, 2q + 5 (high) of each byte to bits 4, 5.
    const int q = sub % 2;
    const int up = 4 - 2 * q, down = 2 * q;
    const auto low = [up](uint32_t ql, uint32_t qh) { return (ql & 0x0f0f0f0fu) | ((qh << up) & 0x30303030u); };
    const auto high = [down](uint32_t ql, uint32_t qh) {
      return ((ql >> 4) & 0x0f0f0f0fu) | ((qh >> down) & 0x30303030u);
    };
    uint4 lo[2], hi[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 &ql = l.ql[h], &qh = l.qh[h];
      lo[h] = {low(ql.x, qh.x), low(ql.y, qh.y), low(ql.z, qh.z), low(ql.w, qh.w)};
      hi[h] = {high(ql.x, qh.x), high(ql.y, qh.y), high(ql.z, qh.z), high(ql.w, qh.w)};
    }
    constexpr uint32_t kMinus32 = 0xe0e0e0e0u;  // -32 in each signed byte
    const uint4 offset = {kMinus32, kMinus32, kMinus32, kMinus32};
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      const auto piece = [&](const uint4& quants, int i) {
        const uint4 acts = l.acts.get(x, xr, t, i);
        return dot16(quants, acts) + dot16(offset, acts);
      };
      s[t] = l.sc_lo.x * piece(lo[0], 0) + l.sc_lo.y * piece(lo[1], 1) + l.sc_hi.x * piece(hi[0], 2) +
             l.sc_hi.y * piece(hi[1], 3);
      m[t] = 0;
    }
    d = quant::fp16_to_fp32(l.d);
    dmin = 0.0f;
  }
};

// The steps of a warp's round set for its chains: slot i is super-block sb0 + i (packed rows:
// row j's super-block i is slot j * n_sb + i).
template <int kRows, int kSlots>
struct ChainSlots {
  ChainStep step[kRows][kSlots];
};

// A launch: args, and up to two more weights (mat_vec_q_parts) whose rows take the blocks from
// part_block[i] on.
struct MatVecLaunch {
  QuantMatMulArgs args;
  MatVecPart more[kMaxMatMulParts - 1];
  int n_more;
  unsigned part_block[kMaxMatMulParts - 1];
};

// The weight (part) that this block's rows are of, in `a`, and the block's index among that
// part's blocks.
__device__ __forceinline__ int64_t select_part(const MatVecLaunch& launch, QuantMatMulArgs& a) {
  a = launch.args;
  auto block = static_cast<int64_t>(blockIdx.x);
  // (Unrolled: a constant index keeps the parts in parameter space, not copied to the stack.)
#pragma unroll
  for (int i = kMaxMatMulParts - 2; i >= 0; --i) {
    if (i < launch.n_more && block >= launch.part_block[i]) {
      a.w = launch.more[i].w;
      a.out = launch.more[i].out;
      a.ldo = launch.more[i].ldo;
      block -= launch.part_block[i];
      break;
    }
  }
  return block;
}

// Weight rows mat_vec_q_kernel's warp takes side by side: as many as fit a round when a row
// has fewer super-blocks than a round (its one round set), else one.
__host__ __device__ inline int packed_rows(int64_t n_sb, int per_round, int unroll) {
  return unroll == 1 && n_sb > 0 && n_sb < per_round ? static_cast<int>(per_round / n_sb) : 1;
}

// blockIdx: x = rows of kWarps warps (a warp per weight row, or `packed` rows), z = expert
// (expert mode).
// kUnroll rounds of 32 / kLanes super-blocks are loaded before the chain waits on them.
template <class T, int kRows, int kUnroll>
__global__ void __launch_bounds__(32 * kWarps) mat_vec_q_kernel(MatVecLaunch launch) {
  QuantMatMulArgs a;
  const int64_t block = select_part(launch, a);
  using Share = LaneShare<T>;
  constexpr int kLanes = Share::kLanes;
  constexpr int kPerRound = 32 / kLanes;  // super-blocks side by side in one round
  constexpr int kSlots = kPerRound * kUnroll;
  __shared__ ChainSlots<kRows, kSlots> warp_slots[kWarps];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int sub = lane % kLanes;
  const int n_sb_row = static_cast<int>(a.x.k / T::kSuperBlock);
  // Rows shorter than a round (an expert's down projection: 3 super-blocks of 8 slots) sit
  // side by side in the warp, `packed` of them, row_in_warp's super-blocks in slots
  // row_in_warp * n_sb_row ..; the lane groups past them compute the last row's last
  // super-block again and write no step.
  const int packed = packed_rows(n_sb_row, kPerRound, kUnroll);
  const int row_in_warp = packed > 1 ? min(lane / kLanes / n_sb_row, packed - 1) : 0;
  const int slot = packed > 1 ? lane / kLanes - row_in_warp * n_sb_row : lane / kLanes;
  ChainSlots<kRows, kSlots>& slots = warp_slots[warp];
  // NOTE(mat_vec_q): while the kernel before this one finishes (gpu::launch), a plain-mode
  // warp already knows its row and pulls the row's first 4 KiB of weights (no kernel writes
  // them) into L2, a 128-byte line a lane; an expert-mode warp learns its rows from the routing,
  // which that kernel may still be writing.
  if (a.experts.offsets == nullptr) {
    // (A warp's packed rows lie one after the other: their bytes are one span.)
    const int64_t first_row = (block * kWarps + warp) * packed;
    const int64_t span_rows = first_row < a.w.rows ? min(static_cast<int64_t>(packed), a.w.rows - first_row) : 0;
    if (static_cast<size_t>(lane) * 128 < static_cast<size_t>(span_rows) * a.w.q_row_bytes) {
      gpu::prefetch_l2(weight_row(a.w, first_row) + lane * 128);
    }
  }
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
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
  const int64_t r0 = (block * kWarps + warp) * packed;
  if (r0 >= n_rows) return;  // the whole warp; no block-wide barrier follows
  // (A packed row past the end computes the last row again and is not stored.)
  const int64_t row = w_offset + min(r0 + row_in_warp, n_rows - 1);
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
  for (int64_t sb0 = 0; sb0 < n_sb; sb0 += kSlots) {
    // Every load of the round set first (weights, activations and their scales) ...
    typename Share::template Loaded<kRows> loaded[kUnroll];
    float dx[kUnroll][kRows];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t sb = sb0 + u * kPerRound + slot < n_sb ? sb0 + u * kPerRound + slot : n_sb - 1;
      Share::load_weights(a.w, row, sb, sub, loaded[u]);
      Share::load_acts(sb, sub, a.x, xr, loaded[u]);
#pragma unroll
      for (int t = 0; t < kRows; ++t) dx[u][t] = a.x.d[xr[t] * n_sb + sb];
    }
    // ... then the arithmetic.
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      int s[kRows], m[kRows];
      float d, dmin;
      Share::compute(loaded[u], sub, a.x, xr, s, m, d, dmin);
      // The group's shares added up: exact integers, so the order does not matter.
#pragma unroll
      for (int mask = 1; mask < kLanes; mask *= 2) {
#pragma unroll
        for (int t = 0; t < kRows; ++t) {
          s[t] += gpu::shfl_xor(s[t], mask);
          if constexpr (T::kMins) m[t] += gpu::shfl_xor(m[t], mask);
        }
      }
      // Every lane makes the step (its operands stay live in every lane, so their loads are
      // not moved into the branch); the group's first lane keeps it.
      ChainStep steps[kRows];
#pragma unroll
      for (int t = 0; t < kRows; ++t) steps[t] = T::step(d, dmin, dx[u][t], s[t], m[t]);
      if (sub == 0 && (packed == 1 || slot < n_sb_row)) {
#pragma unroll
        for (int t = 0; t < kRows; ++t) slots.step[t][u * kPerRound + row_in_warp * n_sb_row + slot] = steps[t];
      }
    }
    gpu::sync_group();
    if (packed > 1) {
      // Lane j: packed row j's chain, its n_sb_row steps in super-block order (one round set).
      if (lane < packed) {
        for (int i = 0; i < n_sb_row; ++i) {
#pragma unroll
          for (int t = 0; t < kRows; ++t) acc[t] = T::apply(acc[t], slots.step[t][lane * n_sb_row + i]);
        }
      }
    } else if (lane == 0) {
      // The chain, in super-block order (the slots past the row's end are not applied).
#pragma unroll
      for (int i = 0; i < kSlots; ++i) {
        if (sb0 + i < n_sb) {
#pragma unroll
          for (int t = 0; t < kRows; ++t) acc[t] = T::apply(acc[t], slots.step[t][i]);
        }
      }
    }
    gpu::sync_group();  // the slots are written again by the next round set
  }
  if (lane >= packed || r0 + lane >= n_rows) return;
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    if (x_begin + t < x_end) a.out[(x_begin + t) * a.ldo + r0 + lane] = acc[t];
  }
}

// A weight row's step for one super-block and one activation row (plain mode), from a lane's
// loaded share: the group's exact sums, then the step, which every lane makes (its group's
// first lane keeps it).
template <class T, class Loaded>
__device__ __forceinline__ ChainStep one_row_step(const Loaded& loaded, int sub, const QuantActs& x, float dx) {
  const int64_t xr[1] = {0};
  int s[1], m[1];
  float d, dmin;
  LaneShare<T>::compute(loaded, sub, x, xr, s, m, d, dmin);
#pragma unroll
  for (int mask = 1; mask < LaneShare<T>::kLanes; mask *= 2) {
    s[0] += gpu::shfl_xor(s[0], mask);
    if constexpr (T::kMins) m[0] += gpu::shfl_xor(m[0], mask);
  }
  return T::step(d, dmin, dx, s[0], m[0]);
}

// One activation row in plain mode (a decode step of one sequence): a warp takes kWeightRows
// weight rows and its lanes keep their share of the activations (kRounds rounds of 32 / kLanes
// super-blocks) in registers across them, so a row costs its weight loads and arithmetic only;
// the rows' chains run side by side, row i's in lane i. The next row's weights are loaded
// while this row's are multiplied. The steps and their order per row are mat_vec_q_kernel's:
// the same bits.
// NOTE(mat_vec_q): mat_vec_q_kernel, one row a warp, is bound by instructions issued (the note
// at the top); there every row pays for the activations' loads and for lane 0's chain (a
// warp's issue slots for one lane's work), which are shared here.
template <class T, int kWeightRows, int kRounds>
__global__ void __launch_bounds__(32 * kWarps) mat_vec_q_rows_kernel(MatVecLaunch launch) {
  QuantMatMulArgs a;
  const int64_t block = select_part(launch, a);
  using Share = LaneShare<T>;
  using Loaded = typename Share::template Loaded<1>;
  constexpr int kLanes = Share::kLanes;
  constexpr int kPerRound = 32 / kLanes;
  constexpr int kSlots = kPerRound * kRounds;  // super-blocks per chunk of the activations
  // (A row's steps one slot apart from the next row's: the chain's lanes read distinct banks.)
  __shared__ ChainStep warp_steps[kWarps][kWeightRows][kSlots + 1];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int sub = lane % kLanes;
  const int slot = lane / kLanes;
  const int64_t r0 = (block * kWarps + warp) * kWeightRows;
  // (As mat_vec_q_kernel: the first rows' first bytes into L2 while the kernel before ends.)
  if (r0 + lane / 8 < a.w.rows && lane / 8 < kWeightRows && static_cast<size_t>(lane % 8) * 128 < a.w.q_row_bytes) {
    gpu::prefetch_l2(weight_row(a.w, r0 + lane / 8) + (lane % 8) * 128);
  }
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  if (r0 >= a.w.rows) return;  // the whole warp; no block-wide barrier follows
  const int64_t xr[1] = {0};
  const int64_t n_sb = a.x.k / T::kSuperBlock;
  ChainStep(&steps)[kWeightRows][kSlots + 1] = warp_steps[warp];
  const auto row_at = [&](int i) { return r0 + i < a.w.rows ? r0 + i : a.w.rows - 1; };
  float acc = 0.0f;  // lane i < kWeightRows: row r0 + i
  for (int64_t sb0 = 0; sb0 < n_sb; sb0 += kSlots) {
    int64_t sb[kRounds];
    Loaded acts[kRounds];  // the activations of the chunk (their weight fields unused)
    float dx[kRounds];
#pragma unroll
    for (int u = 0; u < kRounds; ++u) {
      sb[u] = sb0 + u * kPerRound + slot < n_sb ? sb0 + u * kPerRound + slot : n_sb - 1;
      Share::load_acts(sb[u], sub, a.x, xr, acts[u]);
      dx[u] = a.x.d[sb[u]];
    }
    Loaded next[kRounds];
#pragma unroll
    for (int u = 0; u < kRounds; ++u) {
      next[u] = acts[u];
      Share::load_weights(a.w, row_at(0), sb[u], sub, next[u]);
    }
    // (Not unrolled: the compiler would load every row's weights up front, past 200 registers.)
#pragma unroll 1
    for (int i = 0; i < kWeightRows; ++i) {
      Loaded current[kRounds];
#pragma unroll
      for (int u = 0; u < kRounds; ++u) current[u] = next[u];
      if (i + 1 < kWeightRows) {
#pragma unroll
        for (int u = 0; u < kRounds; ++u) Share::load_weights(a.w, row_at(i + 1), sb[u], sub, next[u]);
      }
#pragma unroll
      for (int u = 0; u < kRounds; ++u) {
        const ChainStep step = one_row_step<T>(current[u], sub, a.x, dx[u]);
        if (sub == 0) steps[i][u * kPerRound + slot] = step;
      }
    }
    gpu::sync_group();
    if (lane < kWeightRows) {
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        if (sb0 + j < n_sb) acc = T::apply(acc, steps[lane][j]);
      }
    }
    gpu::sync_group();  // the steps are written again by the next chunk
  }
  if (lane < kWeightRows && r0 + lane < a.w.rows) a.out[r0 + lane] = acc;
}

// One activation row in plain mode, over a few thousand weight rows: a block's warps share
// its kWeightRows rows and split a row's rounds of 32 / kLanes super-blocks between them (warp
// w takes rounds w, w + warps, ...), each round's loads (activations and every row's weights)
// issued before its arithmetic. The steps go to shared memory, and after a barrier the rows'
// chains run in super-block order (row i's in lane i of warp 0): the steps and their order
// are mat_vec_q_kernel's, so the same bits.
// NOTE(mat_vec_q): in mat_vec_q_rows_kernel a warp walks a long row's chunks one after the
// other, a trip to memory each (ncu, H200: the 4096 x 12288 Q6_K down projection at 1.7 TB/s,
// where the 151936-row output matvec of the same kernel reached 3.1 TB/s); here a row's
// chunks are in flight together, in as many warps.
template <class T, int kWeightRows>
__global__ void __launch_bounds__(32 * kWarps) mat_vec_q_split_kernel(MatVecLaunch launch) {
  QuantMatMulArgs a;
  const int64_t block = select_part(launch, a);
  using Share = LaneShare<T>;
  using Loaded = typename Share::template Loaded<1>;
  constexpr int kLanes = Share::kLanes;
  constexpr int kPerRound = 32 / kLanes;
  extern __shared__ ChainStep split_steps[];  // [kWeightRows][n_sb + 1]
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int n_warps = static_cast<int>(blockDim.x / 32);
  const int sub = lane % kLanes;
  const int slot = lane / kLanes;
  const int64_t r0 = block * kWeightRows;
  const int64_t n_sb = a.x.k / T::kSuperBlock;
  const int64_t stride = n_sb + 1;  // (rows one slot apart: the chains' lanes read distinct banks)
  const auto row_at = [&](int i) { return r0 + i < a.w.rows ? r0 + i : a.w.rows - 1; };
  // (As mat_vec_q_kernel: a KiB of each row from this warp's first round on into L2, a line a
  // lane, while the kernel before ends.)
  const int64_t first_byte = static_cast<int64_t>(warp) * kPerRound * T::kBlockBytes + (lane % 8) * 128;
  if (r0 < a.w.rows && lane / 8 < kWeightRows && first_byte < static_cast<int64_t>(a.w.q_row_bytes)) {
    gpu::prefetch_l2(weight_row(a.w, row_at(lane / 8)) + first_byte);
  }
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  if (r0 >= a.w.rows) return;  // the whole block
  const int64_t xr[1] = {0};
  const int64_t n_rounds = (n_sb + kPerRound - 1) / kPerRound;
  for (int64_t round = warp; round < n_rounds; round += n_warps) {
    const int64_t sb_wanted = round * kPerRound + slot;
    const int64_t sb = sb_wanted < n_sb ? sb_wanted : n_sb - 1;
    Loaded loaded[kWeightRows];
    Share::load_acts(sb, sub, a.x, xr, loaded[0]);
    const float dx = a.x.d[sb];
#pragma unroll
    for (int i = 1; i < kWeightRows; ++i) loaded[i] = loaded[0];
#pragma unroll
    for (int i = 0; i < kWeightRows; ++i) Share::load_weights(a.w, row_at(i), sb, sub, loaded[i]);
#pragma unroll
    for (int i = 0; i < kWeightRows; ++i) {
      const ChainStep step = one_row_step<T>(loaded[i], sub, a.x, dx);
      if (sub == 0 && sb_wanted < n_sb) split_steps[i * stride + sb] = step;
    }
  }
  __syncthreads();
  if (warp == 0 && lane < kWeightRows && r0 + lane < a.w.rows) {
    float acc = 0.0f;
    for (int64_t sb = 0; sb < n_sb; ++sb) acc = T::apply(acc, split_steps[lane * stride + sb]);
    a.out[r0 + lane] = acc;
  }
}

template <class T, int kRows>
void launch_rows(const MatVecLaunch& l, const dim3& grid, gpu::stream_t stream) {
  // Two rounds in flight where a row has them and the registers allow (few activation rows).
  constexpr int kPerRound = 32 / LaneShare<T>::kLanes;
  if constexpr (kRows <= 2) {
    if (l.args.x.k / T::kSuperBlock >= 2 * kPerRound) {
      (void)gpu::launch(mat_vec_q_kernel<T, kRows, 2>, grid, 32 * kWarps, 0, stream, l);
      return;
    }
  }
  (void)gpu::launch(mat_vec_q_kernel<T, kRows, 1>, grid, 32 * kWarps, 0, stream, l);
}

template <class T, int kWeightRows>
void launch_weight_rows(const MatVecLaunch& l, const dim3& grid, gpu::stream_t stream) {
  constexpr int kPerRound = 32 / LaneShare<T>::kLanes;
  if (l.args.x.k / T::kSuperBlock >= 2 * kPerRound) {
    (void)gpu::launch(mat_vec_q_rows_kernel<T, kWeightRows, 2>, grid, 32 * kWarps, 0, stream, l);
  } else {
    (void)gpu::launch(mat_vec_q_rows_kernel<T, kWeightRows, 1>, grid, 32 * kWarps, 0, stream, l);
  }
}

template <class T, int kWeightRows>
void launch_split(const MatVecLaunch& l, const dim3& grid, int warps, gpu::stream_t stream) {
  const size_t shared = kWeightRows * (l.args.x.k / T::kSuperBlock + 1) * sizeof(ChainStep);
  (void)gpu::launch(mat_vec_q_split_kernel<T, kWeightRows>, grid, static_cast<unsigned>(32 * warps), shared, stream, l);
}

// How a launch lays out its weight rows: `weight_rows` a warp (mat_vec_q_kernel: 1;
// mat_vec_q_rows_kernel: 2, 4 or 8), or, when `split`, `weight_rows` a block whose `warps`
// warps share each row (mat_vec_q_split_kernel).
struct RowLayout {
  int weight_rows = 1;
  bool split = false;
  int warps = kWarps;
  int packed = 1;  // mat_vec_q_kernel: rows side by side in a warp (packed_rows)
  int64_t blocks(int64_t rows) const {
    const int64_t per_block = split ? weight_rows : kWarps * weight_rows * packed;
    return (rows + per_block - 1) / per_block;
  }
};

template <class T>
void launch_type(const MatVecLaunch& l, int64_t n_blocks, int64_t n_tokens, int64_t n_expert, const RowLayout& layout,
                 gpu::stream_t stream) {
  const dim3 grid(static_cast<unsigned>(n_blocks), 1, static_cast<unsigned>(n_expert));
  if (layout.split) return launch_split<T, kSplitRows>(l, grid, layout.warps, stream);
  switch (layout.weight_rows) {
    case 8:
      return launch_weight_rows<T, 8>(l, grid, stream);
    case 4:
      return launch_weight_rows<T, 4>(l, grid, stream);
    case 2:
      return launch_weight_rows<T, 2>(l, grid, stream);
    default:
      break;
  }
  switch (n_tokens) {
    case 1:
      launch_rows<T, 1>(l, grid, stream);
      break;
    case 2:
      launch_rows<T, 2>(l, grid, stream);
      break;
    case 3:
    case 4:
      launch_rows<T, 4>(l, grid, stream);
      break;
    default:
      launch_rows<T, 8>(l, grid, stream);
  }
}

// A row of k columns as mat_vec_q_split_kernel walks it: its super-blocks and its rounds of
// 32 / kLanes of them.
struct RowRounds {
  int64_t n_sb;
  int64_t rounds;
  int per_round;  // super-blocks of a warp's round
};

template <class T>
RowRounds row_rounds(int64_t k) {
  constexpr int64_t kPerRound = 32 / LaneShare<T>::kLanes;
  const int64_t n_sb = k / T::kSuperBlock;
  return {n_sb, (n_sb + kPerRound - 1) / kPerRound, static_cast<int>(kPerRound)};
}

// Calls f(T{}) with the traits of a weight type this file has kernels for; false for any other.
template <class F>
bool with_traits(DType type, F&& f) {
  switch (type) {
    case DType::Q8_0:
      f(TraitsQ8_0{});
      return true;
    case DType::Q4_K:
      f(TraitsQ4K{});
      return true;
    case DType::Q5_K:
      f(TraitsQ5K{});
      return true;
    case DType::Q6_K:
      f(TraitsQ6K{});
      return true;
    default:
      return false;
  }
}

RowRounds row_rounds(DType type, int64_t k) {
  RowRounds rounds{0, 0, 1};  // no split layout for another type (launch() refuses it)
  with_traits(type, [&](auto traits) { rounds = row_rounds<decltype(traits)>(k); });
  return rounds;
}

// The layout of a launch of `total` weight rows, for one activation row in plain mode: split
// rows (kSplitRows a block) from 2,048 to 65,535 rows of more than one round; else several
// rows a warp, as many as leave 256 blocks or more (an H100 or H200 has 132 SMs). Other
// launches: mat_vec_q_kernel, one row a warp or rows shorter than a round side by side.
// NOTE(mat_vec_q): measured on an H100 (session 18, tg128, means of two rounds, the Q6_K
// change on both sides): split rows from 2,048 rows, 8B 329.9 -> 339.8 t/s and 1.7B 684.8 ->
// 717.6; one row a block was slower than the rows kernel (8B 316) and four rows a block (332)
// slower than two. The 151,936-row output matvec stays with the rows kernel: eight rows a warp
// already keep it near the memory's speed (2.8 TB/s), and a split block per two of its rows
// would be 76k blocks.
RowLayout row_layout(const QuantMatMulArgs& args, int64_t total) {
  const RowRounds row = row_rounds(args.w.type, args.x.k);
  // mat_vec_q_kernel's layout: a row a warp, or rows shorter than a round side by side (its
  // one round set: launch_rows unrolls only rows of two rounds or more).
  const RowLayout one_row{.packed = packed_rows(row.n_sb, row.per_round, 1)};
  if (args.experts.offsets != nullptr || args.x.rows != 1) return one_row;
  const bool fits = static_cast<size_t>(kSplitRows * (row.n_sb + 1)) * sizeof(ChainStep) <= 48 * 1024;
  if (total >= kSplitFrom && total < kSplitTo && row.rounds >= 2 && fits) {
    return {
        .weight_rows = kSplitRows, .split = true, .warps = static_cast<int>(row.rounds < kWarps ? row.rounds : kWarps)};
  }
  if (total < 2048) return one_row;
  return {.weight_rows = total >= 16384 ? 8 : total >= 8192 ? 4 : 2};
}

Status launch(const MatVecLaunch& l, int64_t n_blocks, const RowLayout& layout, gpu::stream_t stream) {
  const QuantMatMulArgs& args = l.args;
  const int64_t n_tokens = args.experts.offsets != nullptr ? args.experts.max_rows : args.x.rows;
  const int64_t n_expert = args.experts.offsets != nullptr ? expert_grid(args.experts) : 1;
  if (n_tokens < 1 || n_tokens > kMaxRows) return Error{"mat_vec_q: 1 to 8 activation rows"};
  const bool known = with_traits(args.w.type, [&](auto traits) {
    launch_type<decltype(traits)>(l, n_blocks, n_tokens, n_expert, layout, stream);
  });
  if (!known) return Error{"mat_vec_q: not a quantized type"};
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "mat_vec_q(" + std::to_string(args.w.rows) + " rows)");
  return {};
}

}  // namespace

bool mat_vec_q_fits(const QuantActs& x, const ExpertRows* experts) {
  return (experts != nullptr ? experts->max_rows : x.rows) <= kMaxRows;
}

Status mat_vec_q(const QuantMatMulArgs& args, gpu::stream_t stream) {
  const int64_t n_rows = args.experts.offsets != nullptr ? args.w.rows_per_expert : args.w.rows;
  const RowLayout layout = row_layout(args, n_rows);
  return launch({.args = args, .more = {}, .n_more = 0, .part_block = {}}, layout.blocks(n_rows), layout, stream);
}

Status mat_vec_q_parts(const QuantMatMulArgs& args, const MatVecPart* more, int n_more, gpu::stream_t stream) {
  if (n_more < 0 || n_more > kMaxMatMulParts - 1) {
    return Error{"mat_vec_q_parts: at most " + std::to_string(kMaxMatMulParts) + " weights"};
  }
  // Expert mode: every part is a stack of as many experts, routed alike (args.experts).
  const bool by_expert = args.experts.offsets != nullptr;
  const auto rows_of = [&](const WeightView& w) { return by_expert ? w.rows_per_expert : w.rows; };
  MatVecLaunch l{.args = args, .more = {}, .n_more = n_more, .part_block = {}};
  int64_t total = rows_of(args.w);
  for (int i = 0; i < n_more; ++i) total += rows_of(more[i].w);
  const RowLayout layout = row_layout(args, total);
  int64_t n_blocks = layout.blocks(rows_of(args.w));
  for (int i = 0; i < n_more; ++i) {
    const WeightView& w = more[i].w;
    if (w.type != args.w.type || w.cols != args.x.k || (by_expert && w.rows != args.w.rows)) {
      return Error{"mat_vec_q_parts: the weights differ in type, width or experts"};
    }
    l.more[i] = more[i];
    l.part_block[i] = static_cast<unsigned>(n_blocks);
    n_blocks += layout.blocks(rows_of(w));
  }
  return launch(l, n_blocks, layout, stream);
}

}  // namespace gufo::cuda
