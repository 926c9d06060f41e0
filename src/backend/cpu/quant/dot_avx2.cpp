// AVX2 + FMA + F16C row dot products (dot_kernels.h); this file alone is compiled with
// -mavx2 -mfma -mf16c (src/backend/cpu/CMakeLists.txt) and only called after cpuid says so.
// The quantized kernels compute exactly what their twins in dot_scalar.cpp compute, bit for bit
// (dot_kernels.h, "Accumulation order"); the float dots differ in the order of their sums. Tested by
// tests/unit/backend/cpu_matmul_test.cpp (scalar vs AVX2 vs reference).
//
// Everything here lives in an anonymous namespace; see NOTE(avx2) in avx2_common.h.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "backend/cpu/quant/avx2_common.h"
#include "backend/cpu/quant/dot_kernels.h"
#include "backend/cpu/quant/k_quant_drivers.h"

namespace gufo::cpu::fast {
namespace {

using avx2::fma1;
using avx2::four_halves;
using avx2::half_to_float;
using avx2::hsum;
using avx2::hsum_i32;
using avx2::hsum_i32x4;
using avx2::k_min_sums;
using avx2::kHasMins;
using avx2::prefetch_ahead;
using avx2::quad_prefetch_distance;
using avx2::repeat_i16_control;
using avx2::unpack_scales_mins_i16;
using quant::BlockQ4K;
using quant::BlockQ5K;
using quant::BlockQ6K;
using quant::BlockQ8_0;
using quant::BlockQ8K;
using quant::kQ8_0BlockElems;
using quant::kQkK;

uint16_t load_u16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Four independent accumulators hide the FMA latency; the tail is scalar.
float dot_f32(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* x = static_cast<const float*>(x_row);
  const auto* w = reinterpret_cast<const float*>(w_row);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    for (int a = 0; a < 4; ++a) {
      acc[a] = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8 * a), _mm256_loadu_ps(w + j + 8 * a), acc[a]);
    }
  }
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; j < k; ++j) {
    float wj;
    std::memcpy(&wj, w_row + j * 4, sizeof wj);
    sum += x[j] * wj;
  }
  return sum;
}

// kBf16: widen by shifting into the top half of an f32; otherwise F16C's vcvtph2ps (exact).
template <bool kBf16>
__m256 load8_half(const std::byte* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (kBf16) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    return _mm256_cvtph_ps(h);
  }
}

template <bool kBf16>
float dot_half(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* x = static_cast<const float*>(x_row);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    for (int a = 0; a < 4; ++a) {
      acc[a] = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8 * a), load8_half<kBf16>(w_row + (j + 8 * a) * 2), acc[a]);
    }
  }
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; j < k; ++j) {
    const uint16_t bits = load_u16(w_row + j * 2);
    float wj;
    if constexpr (kBf16) {
      const uint32_t wide = static_cast<uint32_t>(bits) << 16;
      std::memcpy(&wj, &wide, sizeof wj);
    } else {
      wj = half_to_float(bits);
    }
    sum += x[j] * wj;
  }
  return sum;
}

// Sum of 32 signed int8 products as 8 int32 lanes. vpmaddubsw multiplies unsigned by signed
// bytes, so the sign of `a` moves onto `b`: |a| * (b * sign(a)). |-128| wraps to 0x80, which
// is 128 read unsigned, so any weight byte is exact; b must be in [-127, 127] (activations
// are), which keeps each pair sum within int16: 2 * 128 * 127 = 32512.
__m256i dot32_i8(__m256i a, __m256i b) {
  const __m256i products = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
  return _mm256_madd_epi16(products, _mm256_set1_epi16(1));
}

// The integer dot product of block b of w with block b of x (8 int32 lanes).
GUFO_KERNEL_INLINE __m256i q8_0_block_sums(const BlockQ8_0& w, const ActBlockQ8_0& x) {
  return dot32_i8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs)),
                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs)));
}

// One weight row: the block sums are reduced four blocks at a time, then accumulated in
// block order (dot_kernels.h, "Accumulation order").
float dot_q8_0(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* w = reinterpret_cast<const BlockQ8_0*>(w_row);
  const auto* x = static_cast<const ActBlockQ8_0*>(x_row);
  const int64_t n_blocks = k / kQ8_0BlockElems;
  float acc = 0.0f;
  int64_t b = 0;
  for (; b + 4 <= n_blocks; b += 4) {
    alignas(16) float sums[4];
    _mm_store_ps(sums,
                 _mm_cvtepi32_ps(hsum_i32x4(q8_0_block_sums(w[b], x[b]), q8_0_block_sums(w[b + 1], x[b + 1]),
                                            q8_0_block_sums(w[b + 2], x[b + 2]), q8_0_block_sums(w[b + 3], x[b + 3]))));
    for (int i = 0; i < 4; ++i) acc = fma1(half_to_float(w[b + i].d) * x[b + i].d, sums[i], acc);
  }
  for (; b < n_blocks; ++b) {
    acc = fma1(half_to_float(w[b].d) * x[b].d, static_cast<float>(hsum_i32(q8_0_block_sums(w[b], x[b]))), acc);
  }
  return acc;
}

// kDotWeights = 4 weight rows against one activation row: lane i of the accumulator is weight
// row i, so the four serial accumulations run side by side and each activation block is loaded
// once for all four rows. Per row, the steps of dot_q8_0.
void dot_q8_0_weights(int64_t k, const std::byte* w_rows, size_t w_stride, const void* x_row, float* out) {
  static_assert(kDotWeights == 4, "one float lane per weight row of an __m128");
  const BlockQ8_0* w[4];
  for (int i = 0; i < 4; ++i) w[i] = reinterpret_cast<const BlockQ8_0*>(w_rows + static_cast<size_t>(i) * w_stride);
  const auto* x = static_cast<const ActBlockQ8_0*>(x_row);
  const size_t ahead = quad_prefetch_distance(w_stride);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    __m256i sums[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      // One line per block and row: a 34-byte block never spans more than two lines, and the
      // next block's prefetch covers the second.
      prefetch_ahead(&w[i][b], 1, ahead);
      sums[i] = dot32_i8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i][b].qs)), qx);
    }
    const __m128 scale = _mm_mul_ps(four_halves(w[0][b].d, w[1][b].d, w[2][b].d, w[3][b].d), _mm_set1_ps(x[b].d));
    acc = _mm_fmadd_ps(scale, _mm_cvtepi32_ps(hsum_i32x4(sums[0], sums[1], sums[2], sums[3])), acc);
  }
  _mm_storeu_ps(out, acc);
}

// --- kDotRows activation rows per weight row (DotRowsFn). Each row's integer sums and float
// accumulation are those of the one-row kernel above, in the same order, so the results are
// bit-identical; only the weight loads, unpacking and scale decoding are shared.

template <typename Block>
const Block* row_at(const void* x_rows, size_t x_stride, int r) {
  return reinterpret_cast<const Block*>(static_cast<const std::byte*>(x_rows) + static_cast<size_t>(r) * x_stride);
}

// Lane r: the Q8_0 block sum of weight block `w` (|w| and the raw quants) with block b of
// activation row r.
GUFO_KERNEL_INLINE __m128i q8_0_rows_block_sums(__m256i qw, __m256i qw_abs, const ActBlockQ8_0* const* x, int64_t b) {
  static_assert(kDotRows == 4, "one int32 lane per activation row of an __m128i");
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i sums[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][b].qs));
    sums[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(qw_abs, _mm256_sign_epi8(qx, qw)), ones);
  }
  return hsum_i32x4(sums[0], sums[1], sums[2], sums[3]);
}

// Lane r: the activation scale of block b of row r.
GUFO_KERNEL_INLINE __m128 q8_0_rows_scales(const ActBlockQ8_0* const* x, int64_t b) {
  return _mm_setr_ps(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d);
}

void dot_q8_0_rows(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  const auto* w = reinterpret_cast<const BlockQ8_0*>(w_row);
  const ActBlockQ8_0* x[kDotRows];
  for (int r = 0; r < kDotRows; ++r) x[r] = row_at<ActBlockQ8_0>(x_rows, x_stride, r);
  __m128 acc = _mm_setzero_ps();  // lane r: activation row r
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
    const __m128i sums = q8_0_rows_block_sums(qw, _mm256_sign_epi8(qw, qw), x, b);
    // d_w * d_x per lane: the same product, in IEEE arithmetic, as the one-row kernel's.
    const __m128 scale = _mm_mul_ps(_mm_set1_ps(half_to_float(w[b].d)), q8_0_rows_scales(x, b));
    acc = _mm_fmadd_ps(scale, _mm_cvtepi32_ps(sums), acc);
  }
  _mm_storeu_ps(out, acc);
}

// Two weight rows x four activation rows; each weight block is loaded once for four rows and
// each activation block once for two. Per pair the steps of dot_q8_0, so every result equals
// the one-row kernel's bit for bit.
void dot_q8_0_tile(int64_t k, const std::byte* w_rows, size_t w_stride, const void* x_rows, size_t x_stride,
                   float* out) {
  const auto* w0 = reinterpret_cast<const BlockQ8_0*>(w_rows);
  const auto* w1 = reinterpret_cast<const BlockQ8_0*>(w_rows + w_stride);
  const ActBlockQ8_0* x[kDotRows];
  for (int r = 0; r < kDotRows; ++r) x[r] = row_at<ActBlockQ8_0>(x_rows, x_stride, r);
  __m128 acc0 = _mm_setzero_ps();
  __m128 acc1 = _mm_setzero_ps();
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0[b].qs));
    const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1[b].qs));
    const __m128i s0 = q8_0_rows_block_sums(q0, _mm256_sign_epi8(q0, q0), x, b);
    const __m128i s1 = q8_0_rows_block_sums(q1, _mm256_sign_epi8(q1, q1), x, b);
    const __m128 dx = q8_0_rows_scales(x, b);
    acc0 = _mm_fmadd_ps(_mm_mul_ps(_mm_set1_ps(half_to_float(w0[b].d)), dx), _mm_cvtepi32_ps(s0), acc0);
    acc1 = _mm_fmadd_ps(_mm_mul_ps(_mm_set1_ps(half_to_float(w1[b].d)), dx), _mm_cvtepi32_ps(s1), acc1);
  }
  _mm_storeu_ps(out, acc0);
  _mm_storeu_ps(out + kDotRows, acc1);
}

// --- K-quants. The integer part of a block is written once, for kRows activation rows
// (qk_4_5_block_sums, q6_k_block_sums: the weight block is loaded, unpacked and its scales
// decoded once for all rows); the drivers of k_quant_drivers.h take the float steps.

// Q4_K/Q5_K: 64 elements (sub-blocks 2c and 2c+1) per 32 quant bytes. The quants are
// unsigned (0..15 or 0..31), so vpmaddubsw takes them directly: pair sums stay within
// 2 * 31 * 127. vpmaddwd by the 6-bit scale (picked from the unpacked scales with vpshufb)
// then widens to int32. The min term, min[s] * (bsums[2s] + bsums[2s+1]) summed over
// sub-blocks, is a vpmaddwd of the mins against the activation's pair sums.
// sums[r]: S of activation block x[r] in eight lanes; mins[r]: M in four lanes.
template <bool kFifthBit, typename Block, int kRows>
GUFO_KERNEL_INLINE void qk_4_5_block_sums(const Block& w, const BlockQ8K* const* x, __m256i* sums, __m128i* mins) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i one = _mm256_set1_epi8(1);
  const __m256i scales_mins = unpack_scales_mins_i16(w.scales);
  const __m256i scales = _mm256_permute2x128_si256(scales_mins, scales_mins, 0x00);
  const __m128i min_scales = _mm256_extracti128_si256(scales_mins, 1);
  __m256i high_bits = _mm256_setzero_si256();
  if constexpr (kFifthBit) high_bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh));
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) sums[r] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * c));
    __m256i q_lo = _mm256_and_si256(packed, low_mask);
    __m256i q_hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_mask);
    if constexpr (kFifthBit) {
      // Bit `sub` of qh[i] is the fifth bit of element i of sub-block `sub`; a 16-bit shift
      // by at most 7 then a per-byte mask of bit 0 never mixes neighbouring bytes.
      const __m256i h_lo = _mm256_and_si256(_mm256_srli_epi16(high_bits, 2 * c), one);
      const __m256i h_hi = _mm256_and_si256(_mm256_srli_epi16(high_bits, 2 * c + 1), one);
      q_lo = _mm256_or_si256(q_lo, _mm256_slli_epi16(h_lo, 4));
      q_hi = _mm256_or_si256(q_hi, _mm256_slli_epi16(h_hi, 4));
    }
    const __m256i scale_lo = _mm256_shuffle_epi8(scales, repeat_i16_control(2 * c, 2 * c));
    const __m256i scale_hi = _mm256_shuffle_epi8(scales, repeat_i16_control(2 * c + 1, 2 * c + 1));
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m256i x_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r]->qs + 64 * c));
      const __m256i x_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r]->qs + 64 * c + 32));
      const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(q_lo, x_lo), scale_lo);
      const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(q_hi, x_hi), scale_hi);
      sums[r] = _mm256_add_epi32(sums[r], _mm256_add_epi32(p_lo, p_hi));
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) mins[r] = k_min_sums(min_scales, x[r]->bsums);
}

// Q6_K: per half of 128 elements, 64 ql bytes and 32 qh bytes give four runs of 32 quants
// (0..63, unsigned for vpmaddubsw; pair sums within 2 * 63 * 127). A run spans two groups of
// 16, one per 128-bit half, so its scale vector holds one group scale per half (vpshufb of the
// half's eight sign-extended scales). The -32 offset is taken out afterwards with the
// activation's per-16 sums: sum (q - 32) x = sum q x - 32 sum x (one vpmaddwd per block).
template <int kRows>
GUFO_KERNEL_INLINE void q6_k_block_sums(const BlockQ6K& w, const BlockQ8K* const* x, __m256i* sums) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
  const __m256i half_scales[2] = {_mm256_permute2x128_si256(scales16, scales16, 0x00),
                                  _mm256_permute2x128_si256(scales16, scales16, 0x11)};
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) sums[r] = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = w.ql + 64 * half;
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * half));
    const __m256i quarter_quants[4] = {
        _mm256_or_si256(_mm256_and_si256(l0, low_mask), _mm256_slli_epi16(_mm256_and_si256(qh, two_bits), 4)),
        _mm256_or_si256(_mm256_and_si256(l1, low_mask),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two_bits), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low_mask),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two_bits), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low_mask),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two_bits), 4)),
    };
#pragma GCC unroll 4
    for (int quarter = 0; quarter < 4; ++quarter) {
      const int first = 128 * half + 32 * quarter;  // element index; groups first/16, first/16 + 1
      const __m256i scales = _mm256_shuffle_epi8(half_scales[half], repeat_i16_control(2 * quarter, 2 * quarter + 1));
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r]->qs + first));
        sums[r] =
            _mm256_add_epi32(sums[r], _mm256_madd_epi16(_mm256_maddubs_epi16(quarter_quants[quarter], xq), scales));
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r]->bsums));
    // |offset lane| <= 2 * 128 * 2032: 32x that fits int32 with room.
    const __m256i offset = _mm256_madd_epi16(scales16, bsums);
    sums[r] = _mm256_sub_epi32(sums[r], _mm256_slli_epi32(offset, 5));
  }
}

// The block sums of weight block w against kRows activation blocks, for either family.
template <typename Block, int kRows>
GUFO_KERNEL_INLINE void k_block_sums(const Block& w, const BlockQ8K* const* x, __m256i* sums, __m128i* mins) {
  if constexpr (kHasMins<Block>) {
    qk_4_5_block_sums<std::is_same_v<Block, BlockQ5K>, Block, kRows>(w, x, sums, mins);
  } else {
    q6_k_block_sums<kRows>(w, x, sums);
  }
}

// The instruction set of the shared K-quant drivers (k_quant_drivers.h).
struct Avx2K {
  using Sums = __m256i;
  template <typename Block, int kRows>
  GUFO_KERNEL_INLINE static void block_sums(const Block& w, const BlockQ8K* const* x, Sums* sums, __m128i* mins) {
    k_block_sums<Block, kRows>(w, x, sums, mins);
  }
  GUFO_KERNEL_INLINE static int32_t sum(Sums s) { return hsum_i32(s); }
  GUFO_KERNEL_INLINE static __m128i sum4(const Sums* s) { return hsum_i32x4(s[0], s[1], s[2], s[3]); }
};

// --- Activation quantizers: byte for byte what quantize_activation_q8_0 / _q8_k (dot_scalar.cpp)
// produce, eight lanes at a time. The scalar code rounds with lround (halves away from zero,
// NaN to 0, clamp to +-127 first); here the vector rounds to nearest even and then moves the
// exact ties away from zero, and NaN lanes are zeroed explicitly.

// max |x[i]| over n (a multiple of 8) floats. A NaN element is skipped, as std::max(amax, NaN)
// skips it in the scalar code: vmaxps returns its second operand when either is NaN.
float max_abs(const float* x, int n) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) amax = _mm256_max_ps(_mm256_andnot_ps(sign_bit, _mm256_loadu_ps(x + i)), amax);
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Eight int32 lanes: round(clamp(x * inv_d, -127, 127)), halves away from zero, NaN -> 0.
__m256i round_q8(__m256 x, __m256 inv_d) {
  const __m256 v = _mm256_mul_ps(x, inv_d);
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  const __m256 clamped = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  const __m256 even = _mm256_round_ps(clamped, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // A tie (|clamped - even| == 0.5, exact) is n + 0.5: clamped + copysign(0.5, clamped) is exact.
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 tie = _mm256_cmp_ps(_mm256_andnot_ps(sign_bit, _mm256_sub_ps(clamped, even)), half, _CMP_EQ_OQ);
  const __m256 away = _mm256_add_ps(clamped, _mm256_or_ps(half, _mm256_and_ps(sign_bit, clamped)));
  const __m256 rounded = _mm256_andnot_ps(nan, _mm256_blendv_ps(even, away, tie));
  return _mm256_cvtps_epi32(rounded);
}

// 32 floats to 32 int8 quants in element order.
__m256i quantize32(const float* x, __m256 inv_d) {
  const __m256i a = round_q8(_mm256_loadu_ps(x), inv_d);
  const __m256i b = round_q8(_mm256_loadu_ps(x + 8), inv_d);
  const __m256i c = round_q8(_mm256_loadu_ps(x + 16), inv_d);
  const __m256i d = round_q8(_mm256_loadu_ps(x + 24), inv_d);
  // packs work per 128-bit lane: the result holds dwords 0,2,4,6,1,3,5,7 of the natural order.
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void quantize_q8_0(const float* x, ActBlockQ8_0* out, int64_t k) {
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const float* xb = x + b * kQ8_0BlockElems;
    const float amax = max_abs(xb, kQ8_0BlockElems);
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 127.0f / amax : 0.0f;
    out[b].d = d;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), quantize32(xb, _mm256_set1_ps(inv_d)));
  }
}

void quantize_q8_k(const float* x, BlockQ8K* out, int64_t k) {
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < k / kQkK; ++b) {
    const float* xb = x + b * kQkK;
    const float amax = max_abs(xb, kQkK);
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 127.0f / amax : 0.0f;
    out[b].d = d;
    const __m256 inv = _mm256_set1_ps(inv_d);
    for (int c = 0; c < kQkK / 32; ++c) {
      const __m256i q = quantize32(xb + 32 * c, inv);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs + 32 * c), q);
      // Sums of runs of 4 quants (vpmaddubsw with unsigned 1s, then vpmaddwd by 1), folded to
      // runs of 8 and 16 by two horizontal adds.
      const __m256i pairs = _mm256_maddubs_epi16(ones, q);
      const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));  // 8 sums of 4
      const __m128i lo = _mm256_castsi256_si128(quads);
      const __m128i hi = _mm256_extracti128_si256(quads, 1);
      const __m128i eights = _mm_hadd_epi32(lo, hi);  // sums of 8: [0-7, 8-15, 16-23, 24-31]
      const __m128i sixteens = _mm_hadd_epi32(eights, eights);
      out[b].bsums[2 * c] = static_cast<int16_t>(_mm_cvtsi128_si32(sixteens));
      out[b].bsums[2 * c + 1] = static_cast<int16_t>(_mm_extract_epi32(sixteens, 1));
    }
  }
}

}  // namespace

PackedKernels avx2_packed_kernels();  // gemm_packed_avx2.cpp

// Called by avx2_dot_kernels() (cpu_features.cpp) once cpuid has confirmed AVX2, FMA, F16C.
const DotKernels& avx2_dot_kernels_unchecked() {
  static const DotKernels kernels{"avx2",
                                  dot_f32,
                                  dot_half<false>,
                                  dot_half<true>,
                                  dot_q8_0,
                                  k_drivers::dot<Avx2K, BlockQ4K>,
                                  k_drivers::dot<Avx2K, BlockQ5K>,
                                  k_drivers::dot<Avx2K, BlockQ6K>,
                                  dot_q8_0_rows,
                                  k_drivers::dot_rows<Avx2K, BlockQ4K>,
                                  k_drivers::dot_rows<Avx2K, BlockQ5K>,
                                  k_drivers::dot_rows<Avx2K, BlockQ6K>,
                                  dot_q8_0_tile,
                                  dot_q8_0_weights,
                                  k_drivers::dot_weights<Avx2K, BlockQ4K>,
                                  k_drivers::dot_weights<Avx2K, BlockQ5K>,
                                  k_drivers::dot_weights<Avx2K, BlockQ6K>,
                                  quantize_q8_0,
                                  quantize_q8_k,
                                  avx2_packed_kernels()};
  return kernels;
}

}  // namespace gufo::cpu::fast
