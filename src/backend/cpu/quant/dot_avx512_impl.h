// AVX-512 (F, BW, VL) dot kernels and packed panels, written once as templates on kVnni and
// compiled by two translation units: dot_avx512.cpp (kVnni = false: vpmaddubsw + vpmaddwd)
// and dot_avx512_vnni.cpp (kVnni = true: vpdpbusd / vpdpwssd, compiled with -mavx512vnni).
// Include it from those two files only; see NOTE(avx2) in avx2_common.h (everything here has
// internal linkage). Each kernel computes exactly the integers and the float steps of its AVX2
// and scalar twins (dot_kernels.h, "Accumulation order"): the results are bit for bit theirs.
// Tested by tests/unit/backend/cpu_matmul_test.cpp, which runs every set the CPU supports.
//
// What the wider vectors buy:
// - Q8_0 rows: two 32-element blocks per vector; the weight's sign moves onto the activation
//   with a mask subtract (there is no 512-bit vpsignb).
// - Q4_K/Q5_K rows: the 32 quant bytes of sub-blocks 2c and 2c+1 are broadcast to both halves
//   and shifted by 0 and 4 (vpsrlvw), so one vector holds 64 consecutive quants and meets 64
//   consecutive activation bytes; the two sub-block scales sit one per 256-bit half.
// - Q6_K rows: 64 ql bytes at once give two runs of 32 quants per vector; each 128-bit lane
//   covers one 16-element group, so one vpshufb picks four group scales.
// - Packed panels: a panel keeps the AVX2 layout (gemm_packed_avx2.cpp) except that the step
//   vectors are regrouped in pairs: 64 bytes per pair of steps, qword i holding 8 consecutive
//   quants of weight row i. An activation qword broadcast (vpbroadcastq) then meets all eight
//   rows, and the two dwords of row i are folded at the end of each block.
#pragma once

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "backend/cpu/quant/avx2_common.h"
#include "backend/cpu/quant/dot_kernels.h"
#include "backend/cpu/quant/k_quant_drivers.h"
#include "backend/cpu/quant/packed_panel_avx2.h"

// NOTE(avx512): GCC 12 warns that '__Y' is (maybe) used uninitialized inside its own
// _mm512_undefined_* helpers wherever an intrinsic uses them (GCC bug 105593, fixed in 13):
// a false positive, silenced for this header only (clang has neither the bug nor the flag).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace gufo::cpu::fast {

PackedKernels avx2_packed_kernels();  // gemm_packed_avx2.cpp

namespace {

using avx2::fma1;
using avx2::four_halves;
using avx2::half_to_float;
using avx2::hsum_i32;
using avx2::hsum_i32x4;
using avx2::k_min_sums;
using avx2::kHasMins;
using avx2::prefetch_ahead;
using avx2::quad_prefetch_distance;
using avx2::unpack_scales_mins_i16;
using quant::BlockQ4K;
using quant::BlockQ5K;
using quant::BlockQ6K;
using quant::BlockQ8_0;
using quant::BlockQ8K;
using quant::kQ8_0BlockElems;
using quant::kQkK;

template <typename Block>
const Block* row_at(const void* x_rows, size_t x_stride, int r) {
  return reinterpret_cast<const Block*>(static_cast<const std::byte*>(x_rows) + static_cast<size_t>(r) * x_stride);
}

__m512i load512(const void* p) { return _mm512_loadu_si512(p); }
__m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 32 bytes at p0 in the low half, 32 bytes at p1 in the high half.
__m512i load_halves(const void* p0, const void* p1) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load256(p0)), load256(p1), 1);
}

__m512i broadcast8(const int8_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm512_set1_epi64(v);
}

// Four copies of the int16 v in one int64 (vector constants are built from these with
// _mm512_setr_epi64, which GCC folds into one load; built from inserts, they were rebuilt
// inside the loops).
constexpr int64_t repeat4_i16(int v) { return static_cast<int64_t>(static_cast<uint16_t>(v) * 0x0001000100010001ull); }
// The vpshufb byte pair that selects int16 lane `word` of a 128-bit lane.
constexpr int pick_i16(int word) { return ((2 * word + 1) << 8) | (2 * word); }

// The 32 int16 lanes of the high 256 bits.
constexpr __mmask32 kHighHalf = 0xffff0000u;

// 16-bit lanes: `lo` in the low 256 bits, `hi` in the high 256 bits.
__m512i halves_i16(int lo, int hi) {
  const int64_t l = repeat4_i16(lo), h = repeat4_i16(hi);
  return _mm512_setr_epi64(l, l, l, l, h, h, h, h);
}

// A vpshufb control that repeats int16 lane w_j of 128-bit lane j across that lane.
__m512i repeat_word_per_lane(int w0, int w1, int w2, int w3) {
  const int64_t c0 = repeat4_i16(pick_i16(w0)), c1 = repeat4_i16(pick_i16(w1));
  const int64_t c2 = repeat4_i16(pick_i16(w2)), c3 = repeat4_i16(pick_i16(w3));
  return _mm512_setr_epi64(c0, c0, c1, c1, c2, c2, c3, c3);
}

// acc + the sums of four u8 x s8 products per int32 lane. Without VNNI the int16 pair sums of
// vpmaddubsw must not saturate: callers keep u <= 128 and |s| <= 127 (2 * 128 * 127 < 2^15).
template <bool kVnni>
__m512i dot_u8_i8(__m512i acc, __m512i u, __m512i s) {
  if constexpr (kVnni) {
    return _mm512_dpbusd_epi32(acc, u, s);
  } else {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
  }
}

// acc + the sums of two int16 products per int32 lane.
template <bool kVnni>
__m512i madd_i16(__m512i acc, __m512i a, __m512i b) {
  if constexpr (kVnni) {
    return _mm512_dpwssd_epi32(acc, a, b);
  } else {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
  }
}

// --- Row kernels, for kRows = 1 (DotFn) or kDotRows (DotRowsFn) activation rows: one
// template, so every row of the four-row version is bit for bit the one-row result.

// Lanes 0 and 1: the sums of the low and the high eight int32 lanes of v (exact).
GUFO_KERNEL_INLINE __m128i half_sums(__m512i v) {
  const __m256i h = _mm256_hadd_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  return _mm_hadd_epi32(s, s);
}

// One step of the Q8_0 kernel over blocks b and b + 1 (kPair) or block b alone (the last of
// an odd count; the high half is then zero): per row, the integer sums of both blocks, then
// the float steps of dot_kernels.h ("Accumulation order") in block order.
template <bool kVnni, bool kPair, int kRows>
GUFO_KERNEL_INLINE void q8_0_step(const BlockQ8_0* w, const ActBlockQ8_0* const* x, int64_t b, float* acc) {
  const __m512i qw = kPair ? load_halves(w[b].qs, w[b + 1].qs) : _mm512_zextsi256_si512(load256(w[b].qs));
  const __m512i w_abs = _mm512_abs_epi8(qw);  // -128 becomes 0x80, read as 128 unsigned
  const __mmask64 w_neg = _mm512_movepi8_mask(qw);
  const float d0 = half_to_float(w[b].d);
  const float d1 = kPair ? half_to_float(w[b + 1].d) : 0.0f;
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    const __m512i qx = kPair ? load_halves(x[r][b].qs, x[r][b + 1].qs) : _mm512_zextsi256_si512(load256(x[r][b].qs));
    const __m512i x_signed = _mm512_mask_sub_epi8(qx, w_neg, _mm512_setzero_si512(), qx);
    const __m128i sums = half_sums(dot_u8_i8<kVnni>(_mm512_setzero_si512(), w_abs, x_signed));
    acc[r] = fma1(d0 * x[r][b].d, static_cast<float>(_mm_cvtsi128_si32(sums)), acc[r]);
    if constexpr (kPair) acc[r] = fma1(d1 * x[r][b + 1].d, static_cast<float>(_mm_extract_epi32(sums, 1)), acc[r]);
  }
}

template <bool kVnni, int kRows>
void dot_q8_0_n(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  const auto* w = reinterpret_cast<const BlockQ8_0*>(w_row);
  const ActBlockQ8_0* x[kRows];
  float acc[kRows];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    x[r] = row_at<ActBlockQ8_0>(x_rows, x_stride, r);
    acc[r] = 0.0f;
  }
  const int64_t n_blocks = k / kQ8_0BlockElems;
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) q8_0_step<kVnni, true, kRows>(w, x, b, acc);
  if (b < n_blocks) q8_0_step<kVnni, false, kRows>(w, x, b, acc);
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) out[r] = acc[r];
}

// --- K-quants: the integer part of a block for kRows activation rows; the drivers of
// k_quant_drivers.h take the float steps.

// Q4_K/Q5_K: per c, sub-blocks 2c (low nibbles) and 2c+1 (high nibbles) as one vector of 64
// unsigned quants (<= 31), against activation bytes 64c..64c+63; vpmaddubsw pair sums stay
// within 2 * 31 * 127, and the 6-bit scales (one per 256-bit half) widen them to int32. The
// min term M is the AVX2 kernel's (dot_avx2.cpp), in four int32 lanes.
template <bool kVnni, bool kFifthBit, typename Block, int kRows>
GUFO_KERNEL_INLINE void qk_4_5_block_sums(const Block& w, const BlockQ8K* const* x, __m512i* sums, __m128i* mins) {
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  const __m512i one = _mm512_set1_epi8(1);
  const __m256i scales_mins = unpack_scales_mins_i16(w.scales);
  const __m512i scales = _mm512_broadcast_i32x4(_mm256_castsi256_si128(scales_mins));  // words 0-7 per lane
  const __m128i min_scales = _mm256_extracti128_si256(scales_mins, 1);
  __m512i high_bits = _mm512_setzero_si512();
  if constexpr (kFifthBit) high_bits = _mm512_broadcast_i64x4(load256(w.qh));
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) sums[r] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512i packed = _mm512_broadcast_i64x4(load256(w.qs + 32 * c));
    __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(packed, kHighHalf, packed, 4), low_mask);
    if constexpr (kFifthBit) {
      // Bit s of qh[i] is the fifth bit of element i of sub-block s (see dot_avx2.cpp).
      const __m512i h = _mm512_and_si512(_mm512_srlv_epi16(high_bits, halves_i16(2 * c, 2 * c + 1)), one);
      q = _mm512_or_si512(q, _mm512_slli_epi16(h, 4));
    }
    const __m512i scale = _mm512_shuffle_epi8(scales, repeat_word_per_lane(2 * c, 2 * c, 2 * c + 1, 2 * c + 1));
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      sums[r] = madd_i16<kVnni>(sums[r], _mm512_maddubs_epi16(q, load512(x[r]->qs + 64 * c)), scale);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) mins[r] = k_min_sums(min_scales, x[r]->bsums);
}

// Q6_K: per half of 128 elements, the 64 ql bytes give quarters 0|1 (low nibbles) and 2|3
// (high nibbles) as two vectors of 64 quants (<= 63), the 32 qh bytes (in both halves, shifted
// by 0|2 and 4|6) their top two bits. 128-bit lane j of quarters 0|1 is group 8 * half + j, of
// quarters 2|3 group 8 * half + 4 + j. The -32 offset is the AVX2 kernel's vpmaddwd of the
// scales against the activation's per-16 sums.
template <bool kVnni, int kRows>
GUFO_KERNEL_INLINE void q6_k_block_sums(const BlockQ6K& w, const BlockQ8K* const* x, __m512i* sums) {
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  const __m512i two_bits = _mm512_set1_epi8(0x03);
  const __m512i shift01 = halves_i16(0, 2);
  const __m512i shift23 = halves_i16(4, 6);
  const __m512i pick01 = repeat_word_per_lane(0, 1, 2, 3);
  const __m512i pick23 = repeat_word_per_lane(4, 5, 6, 7);
  const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) sums[r] = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {
    const __m512i ql = load512(w.ql + 64 * half);
    const __m512i qh = _mm512_broadcast_i64x4(load256(w.qh + 32 * half));
    const __m512i q01 =
        _mm512_or_si512(_mm512_and_si512(ql, low_mask),
                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift01), two_bits), 4));
    const __m512i q23 =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low_mask),
                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift23), two_bits), 4));
    const __m512i half_scales =
        _mm512_broadcast_i32x4(half == 0 ? _mm256_castsi256_si128(scales16) : _mm256_extracti128_si256(scales16, 1));
    const __m512i scale01 = _mm512_shuffle_epi8(half_scales, pick01);
    const __m512i scale23 = _mm512_shuffle_epi8(half_scales, pick23);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const int8_t* xq = x[r]->qs + 128 * half;
      sums[r] = madd_i16<kVnni>(sums[r], _mm512_maddubs_epi16(q01, load512(xq)), scale01);
      sums[r] = madd_i16<kVnni>(sums[r], _mm512_maddubs_epi16(q23, load512(xq + 64)), scale23);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    // |offset lane| <= 2 * 128 * 2032: 32x that fits int32 with room.
    const __m256i offset = _mm256_madd_epi16(scales16, load256(x[r]->bsums));
    sums[r] = _mm512_sub_epi32(sums[r], _mm512_zextsi256_si512(_mm256_slli_epi32(offset, 5)));
  }
}

template <bool kVnni, typename Block, int kRows>
GUFO_KERNEL_INLINE void k_block_sums(const Block& w, const BlockQ8K* const* x, __m512i* sums, __m128i* mins) {
  if constexpr (kHasMins<Block>) {
    qk_4_5_block_sums<kVnni, std::is_same_v<Block, BlockQ5K>, Block, kRows>(w, x, sums, mins);
  } else {
    q6_k_block_sums<kVnni, kRows>(w, x, sums);
  }
}

// Lanes 0..3: the sums of the sixteen int32 lanes of a, b, c and d (exact). Pairs of vectors
// are interleaved and added, so that every step halves the data: 12 one-uop instructions.
GUFO_KERNEL_INLINE __m128i sum4(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  // Each 128-bit lane: [a, b, c, d] partial sums of that lane.
  const __m512i abcd = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  const __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(abcd), _mm512_extracti64x4_epi64(abcd, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
}

// The instruction set of the shared K-quant drivers (k_quant_drivers.h).
template <bool kVnni>
struct Avx512K {
  using Sums = __m512i;
  template <typename Block, int kRows>
  GUFO_KERNEL_INLINE static void block_sums(const Block& w, const BlockQ8K* const* x, Sums* sums, __m128i* mins) {
    k_block_sums<kVnni, Block, kRows>(w, x, sums, mins);
  }
  GUFO_KERNEL_INLINE static int32_t sum(Sums s) { return _mm512_reduce_add_epi32(s); }
  GUFO_KERNEL_INLINE static __m128i sum4(const Sums* s) { return fast::sum4(s[0], s[1], s[2], s[3]); }
};

// For four vectors of Q8_0 pair sums (low 256 bits: block b, high: block b + 1): lane i of
// *s0 is the sum of block b in sums[i], lane i of *s1 that of block b + 1 (exact).
GUFO_KERNEL_INLINE void pair_sums4(const __m512i* sums, __m128i* s0, __m128i* s1) {
  // Each 128-bit lane j of abcd: [sums[0], sums[1], sums[2], sums[3]] partial sums of lane j;
  // lanes 0-1 belong to block b, lanes 2-3 to block b + 1.
  const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(sums[0], sums[1]), _mm512_unpackhi_epi32(sums[0], sums[1]));
  const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(sums[2], sums[3]), _mm512_unpackhi_epi32(sums[2], sums[3]));
  const __m512i abcd = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  const __m256i first = _mm512_castsi512_si256(abcd);
  const __m256i second = _mm512_extracti64x4_epi64(abcd, 1);
  *s0 = _mm_add_epi32(_mm256_castsi256_si128(first), _mm256_extracti128_si256(first, 1));
  *s1 = _mm_add_epi32(_mm256_castsi256_si128(second), _mm256_extracti128_si256(second, 1));
}

// The last block of an odd count, for one accumulator: the one-row kernel's step.
GUFO_KERNEL_INLINE float q8_0_last_step(const BlockQ8_0& w, const ActBlockQ8_0& x, float acc) {
  const __m256i qw = load256(w.qs);
  const __m256i qx = load256(x.qs);
  const __m256i prod =
      _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw)), _mm256_set1_epi16(1));
  return fma1(half_to_float(w.d) * x.d, static_cast<float>(hsum_i32(prod)), acc);
}

// Q8_0, one weight row against kDotRows = 4 activation rows, two blocks per step: lane r of
// the accumulator is activation row r (DotRowsFn).
template <bool kVnni>
void dot_q8_0_rows(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  static_assert(kDotRows == 4, "one float lane per activation row of an __m128");
  const auto* w = reinterpret_cast<const BlockQ8_0*>(w_row);
  const ActBlockQ8_0* x[4];
  for (int r = 0; r < 4; ++r) x[r] = row_at<ActBlockQ8_0>(x_rows, x_stride, r);
  const int64_t n_blocks = k / kQ8_0BlockElems;
  __m128 acc = _mm_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    const __m512i qw = load_halves(w[b].qs, w[b + 1].qs);
    const __m512i w_abs = _mm512_abs_epi8(qw);
    const __mmask64 w_neg = _mm512_movepi8_mask(qw);
    __m512i sums[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const __m512i qx = load_halves(x[r][b].qs, x[r][b + 1].qs);
      sums[r] =
          dot_u8_i8<kVnni>(_mm512_setzero_si512(), w_abs, _mm512_mask_sub_epi8(qx, w_neg, _mm512_setzero_si512(), qx));
    }
    __m128i s0;
    __m128i s1;
    pair_sums4(sums, &s0, &s1);
    const __m128 xd0 = _mm_setr_ps(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d);
    const __m128 xd1 = _mm_setr_ps(x[0][b + 1].d, x[1][b + 1].d, x[2][b + 1].d, x[3][b + 1].d);
    acc = _mm_fmadd_ps(_mm_mul_ps(_mm_set1_ps(half_to_float(w[b].d)), xd0), _mm_cvtepi32_ps(s0), acc);
    acc = _mm_fmadd_ps(_mm_mul_ps(_mm_set1_ps(half_to_float(w[b + 1].d)), xd1), _mm_cvtepi32_ps(s1), acc);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, acc);
  for (int r = 0; r < 4; ++r) {
    for (int64_t t = b; t < n_blocks; ++t) lanes[r] = q8_0_last_step(w[t], x[r][t], lanes[r]);
    out[r] = lanes[r];
  }
}

// Q8_0, four weight rows against one activation row, two blocks per step: lane i of the
// accumulator is weight row i (DotWeightsFn).
template <bool kVnni>
void dot_q8_0_weights(int64_t k, const std::byte* w_rows, size_t w_stride, const void* x_row, float* out) {
  static_assert(kDotWeights == 4, "one float lane per weight row of an __m128");
  const BlockQ8_0* w[4];
  for (int i = 0; i < 4; ++i) w[i] = reinterpret_cast<const BlockQ8_0*>(w_rows + static_cast<size_t>(i) * w_stride);
  const auto* x = static_cast<const ActBlockQ8_0*>(x_row);
  const int64_t n_blocks = k / kQ8_0BlockElems;
  const size_t ahead = quad_prefetch_distance(w_stride);
  __m128 acc = _mm_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    const __m512i qx = load_halves(x[b].qs, x[b + 1].qs);
    __m512i sums[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      prefetch_ahead(&w[i][b], 2 * sizeof(BlockQ8_0), ahead);
      const __m512i qw = load_halves(w[i][b].qs, w[i][b + 1].qs);
      const __m512i x_signed = _mm512_mask_sub_epi8(qx, _mm512_movepi8_mask(qw), _mm512_setzero_si512(), qx);
      sums[i] = dot_u8_i8<kVnni>(_mm512_setzero_si512(), _mm512_abs_epi8(qw), x_signed);
    }
    __m128i s0;
    __m128i s1;
    pair_sums4(sums, &s0, &s1);
    acc = _mm_fmadd_ps(_mm_mul_ps(four_halves(w[0][b].d, w[1][b].d, w[2][b].d, w[3][b].d), _mm_set1_ps(x[b].d)),
                       _mm_cvtepi32_ps(s0), acc);
    acc = _mm_fmadd_ps(
        _mm_mul_ps(four_halves(w[0][b + 1].d, w[1][b + 1].d, w[2][b + 1].d, w[3][b + 1].d), _mm_set1_ps(x[b + 1].d)),
        _mm_cvtepi32_ps(s1), acc);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, acc);
  for (int i = 0; i < 4; ++i) {
    for (int64_t t = b; t < n_blocks; ++t) lanes[i] = q8_0_last_step(w[i][t], x[t], lanes[i]);
    out[i] = lanes[i];
  }
}

template <bool kVnni>
float dot_q8_0(int64_t k, const std::byte* w_row, const void* x_row) {
  float out;
  dot_q8_0_n<kVnni, 1>(k, w_row, x_row, 0, &out);
  return out;
}

// --- Packed panels. Packing is the AVX2 packing followed by regrouping each block's step
// vectors in pairs (see the top of this file); the scale, min and d/dmin tails are unchanged.

// Steps 2p and 2p+1 (lane i: four quants of row i each) become 64 bytes whose qword i is
// row i's eight quants, for every pair p of the n_steps steps at `steps`, in place.
void pair_steps(std::byte* steps, int n_steps) {
  for (int p = 0; p < n_steps / 2; ++p) {
    std::byte* at = steps + 64 * p;
    const __m256i a = load256(at);
    const __m256i b = load256(at + 32);
    const __m256i lo = _mm256_unpacklo_epi32(a, b);  // rows 0, 1 | 4, 5
    const __m256i hi = _mm256_unpackhi_epi32(a, b);  // rows 2, 3 | 6, 7
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
  }
}

template <PackFn PackedKernels::*kPack, size_t kBlockBytes, int kBlockElems, int kSteps>
void pack_paired(int64_t k, const std::byte* w_rows, size_t w_stride, std::byte* packed) {
  (avx2_packed_kernels().*kPack)(k, w_rows, w_stride, packed);
  for (int64_t b = 0; b < k / kBlockElems; ++b) pair_steps(packed + b * kBlockBytes, kSteps);
}

// The eight row sums of a 16-lane vector whose lanes 2i and 2i+1 belong to weight row i.
__m256i fold_rows(__m512i sums) { return _mm512_cvtepi64_epi32(_mm512_add_epi32(sums, _mm512_srli_epi64(sums, 32))); }

template <typename Block>
const Block* act_row(const void* x_rows, size_t x_stride, int r) {
  return row_at<Block>(x_rows, x_stride, r);
}

template <bool kVnni, int kRows>
void gemm_q8_0_rows(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, float* out,
                    size_t out_stride) {
  const ActBlockQ8_0* x[kRows];
  __m256 acc[kRows];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    x[r] = act_row<ActBlockQ8_0>(x_rows, x_stride, r);
    acc[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const std::byte* blk = packed + b * kPackedQ8_0BlockBytes;
    __m512i sum[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) sum[r] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m512i w = load512(blk + 64 * p);
      const __m512i w_abs = _mm512_abs_epi8(w);
      const __mmask64 w_neg = _mm512_movepi8_mask(w);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const __m512i xb = broadcast8(x[r][b].qs + 8 * p);
        sum[r] = dot_u8_i8<kVnni>(sum[r], w_abs, _mm512_mask_sub_epi8(xb, w_neg, _mm512_setzero_si512(), xb));
      }
    }
    const __m256 dw = _mm256_loadu_ps(reinterpret_cast<const float*>(blk + 256));
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      acc[r] =
          _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(x[r][b].d)), _mm256_cvtepi32_ps(fold_rows(sum[r])), acc[r]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) _mm256_storeu_ps(out + r * out_stride, acc[r]);
}

// K-quants: per group g (16 elements = step pairs 2g, 2g+1), two vpmaddubsw add in int16
// (<= 2 * 2 * 63 * 127 = 32004) before the group scale widens them, as in the AVX2 kernel.
template <bool kVnni, bool kOffset, int kRows>
void gemm_k_rows(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, float* out,
                 size_t out_stride) {
  const BlockQ8K* x[kRows];
  __m256 acc[kRows];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    x[r] = act_row<BlockQ8K>(x_rows, x_stride, r);
    acc[r] = _mm256_setzero_ps();
  }
  const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  for (int64_t b = 0; b < k / kQkK; ++b) {
    const std::byte* blk = packed + b * kPackedKBlockBytes;
    __m512i sum[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) sum[r] = _mm512_setzero_si512();
    for (int g = 0; g < 16; ++g) {
      const __m512i scale =
          _mm512_permutexvar_epi32(dup, _mm512_castsi256_si512(load256(blk + panel::kKScales + 32 * g)));
      const __m512i w0 = load512(blk + 64 * (2 * g));
      const __m512i w1 = load512(blk + 64 * (2 * g + 1));
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const int8_t* xq = x[r][b].qs + 16 * g;
        const __m512i p =
            _mm512_add_epi16(_mm512_maddubs_epi16(w0, broadcast8(xq)), _mm512_maddubs_epi16(w1, broadcast8(xq + 8)));
        sum[r] = madd_i16<kVnni>(sum[r], p, scale);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) acc[r] = panel::k_block_tail<kOffset>(blk, x[r][b], fold_rows(sum[r]), acc[r]);
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) _mm256_storeu_ps(out + r * out_stride, acc[r]);
}

template <bool kVnni>
void gemm_q8_0(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, int n_rows, float* out,
               size_t out_stride) {
  switch (n_rows) {
    case 1:
      return gemm_q8_0_rows<kVnni, 1>(k, packed, x_rows, x_stride, out, out_stride);
    case 2:
      return gemm_q8_0_rows<kVnni, 2>(k, packed, x_rows, x_stride, out, out_stride);
    case 3:
      return gemm_q8_0_rows<kVnni, 3>(k, packed, x_rows, x_stride, out, out_stride);
    default:
      return gemm_q8_0_rows<kVnni, 4>(k, packed, x_rows, x_stride, out, out_stride);
  }
}

template <bool kVnni, bool kOffset>
void gemm_k(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, int n_rows, float* out,
            size_t out_stride) {
  switch (n_rows) {
    case 1:
      return gemm_k_rows<kVnni, kOffset, 1>(k, packed, x_rows, x_stride, out, out_stride);
    case 2:
      return gemm_k_rows<kVnni, kOffset, 2>(k, packed, x_rows, x_stride, out, out_stride);
    case 3:
      return gemm_k_rows<kVnni, kOffset, 3>(k, packed, x_rows, x_stride, out, out_stride);
    default:
      return gemm_k_rows<kVnni, kOffset, 4>(k, packed, x_rows, x_stride, out, out_stride);
  }
}

// The AVX-512 set: these kernels for Q8_0 and the K-quants; the AVX2 set's float dots and
// activation quantizers (base). No Q8_0 tile: these four-row kernels measured faster.
template <bool kVnni>
DotKernels make_avx512_kernels(const char* name, const DotKernels& base) {
  DotKernels kernels = base;
  kernels.name = name;
  kernels.q8_0 = dot_q8_0<kVnni>;
  kernels.q4_k = k_drivers::dot<Avx512K<kVnni>, BlockQ4K>;
  kernels.q5_k = k_drivers::dot<Avx512K<kVnni>, BlockQ5K>;
  kernels.q6_k = k_drivers::dot<Avx512K<kVnni>, BlockQ6K>;
  kernels.q8_0_rows = dot_q8_0_rows<kVnni>;
  kernels.q4_k_rows = k_drivers::dot_rows<Avx512K<kVnni>, BlockQ4K>;
  kernels.q5_k_rows = k_drivers::dot_rows<Avx512K<kVnni>, BlockQ5K>;
  kernels.q6_k_rows = k_drivers::dot_rows<Avx512K<kVnni>, BlockQ6K>;
  kernels.q8_0_tile = nullptr;
  kernels.q8_0_weights = dot_q8_0_weights<kVnni>;
  kernels.q4_k_weights = k_drivers::dot_weights<Avx512K<kVnni>, BlockQ4K>;
  kernels.q5_k_weights = k_drivers::dot_weights<Avx512K<kVnni>, BlockQ5K>;
  kernels.q6_k_weights = k_drivers::dot_weights<Avx512K<kVnni>, BlockQ6K>;
  kernels.packed =
      PackedKernels{.pack_q8_0 = pack_paired<&PackedKernels::pack_q8_0, kPackedQ8_0BlockBytes, kQ8_0BlockElems, 8>,
                    .pack_q4_k = pack_paired<&PackedKernels::pack_q4_k, kPackedKBlockBytes, kQkK, 64>,
                    .pack_q5_k = pack_paired<&PackedKernels::pack_q5_k, kPackedKBlockBytes, kQkK, 64>,
                    .pack_q6_k = pack_paired<&PackedKernels::pack_q6_k, kPackedKBlockBytes, kQkK, 64>,
                    .gemm_q8_0 = gemm_q8_0<kVnni>,
                    .gemm_k = gemm_k<kVnni, false>,
                    .gemm_q6_k = gemm_k<kVnni, true>,
                    // NOTE(packed): matmul_bench 4096x4096, 2 threads, Zen 5, avx512vnni panels vs row
                    // kernels in GFLOP/s: Q8_0 at 8 rows 160 vs 160, at 16 rows 229 vs 178; Q4_K at 16 rows
                    // 212 vs 283, at 32 rows 306 vs 270, at 64 rows 398 vs 282; Q6_K at 16 rows 236 vs 329,
                    // at 32 rows 304 vs 298, at 64 431 vs 325. The wider row kernels hold out longer.
                    .min_rows_q8_0 = 8,
                    .min_rows_k = 32};
  return kernels;
}

}  // namespace
}  // namespace gufo::cpu::fast

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
