// AVX2 + FMA + F16C row dot products (dot_kernels.h); this file alone is compiled with
// -mavx2 -mfma -mf16c (src/backend/cpu/CMakeLists.txt) and only called after cpuid says so.
// Each kernel computes exactly what its twin in dot_scalar.cpp computes, up to the order of
// float sums. Tested by tests/unit/backend/cpu_matmul_test.cpp (scalar vs AVX2 vs reference).
//
// Everything here lives in an anonymous namespace; see NOTE(avx2) in avx2_common.h.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/quant/avx2_common.h"
#include "backend/cpu/quant/dot_kernels.h"

namespace gufo::cpu::fast {
namespace {

using avx2::half_to_float;
using avx2::hsum;
using avx2::hsum128;
using avx2::k_min_sums;
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
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    for (int a = 0; a < 4; ++a) {
      acc[a] =
          _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8 * a), _mm256_loadu_ps(w + j + 8 * a), acc[a]);
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
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    for (int a = 0; a < 4; ++a) {
      acc[a] = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8 * a),
                               load8_half<kBf16>(w_row + (j + 8 * a) * 2), acc[a]);
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

float dot_q8_0(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* w = reinterpret_cast<const BlockQ8_0*>(w_row);
  const auto* x = static_cast<const ActBlockQ8_0*>(x_row);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    const __m256 d = _mm256_set1_ps(half_to_float(w[b].d) * x[b].d);
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot32_i8(qw, qx)), acc);
  }
  return hsum(acc);
}

// --- kDotRows activation rows per weight row (DotRowsFn). Each row's integer sums and float
// accumulation are those of the one-row kernel above, in the same order, so the results are
// bit-identical; only the weight loads, unpacking and scale decoding are shared.

template <typename Block>
const Block* row_at(const void* x_rows, size_t x_stride, int r) {
  return reinterpret_cast<const Block*>(static_cast<const std::byte*>(x_rows) + static_cast<size_t>(r) * x_stride);
}

void dot_q8_0_rows(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  const auto* w = reinterpret_cast<const BlockQ8_0*>(w_row);
  const ActBlockQ8_0* x[kDotRows];
  __m256 acc[kDotRows];
  for (int r = 0; r < kDotRows; ++r) {
    x[r] = row_at<ActBlockQ8_0>(x_rows, x_stride, r);
    acc[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
    const __m256i qw_abs = _mm256_sign_epi8(qw, qw);
    const float dw = half_to_float(w[b].d);
    for (int r = 0; r < kDotRows; ++r) {
      const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][b].qs));
      const __m256i products = _mm256_maddubs_epi16(qw_abs, _mm256_sign_epi8(qx, qw));
      const __m256i sums = _mm256_madd_epi16(products, _mm256_set1_epi16(1));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * x[r][b].d), _mm256_cvtepi32_ps(sums), acc[r]);
    }
  }
  for (int r = 0; r < kDotRows; ++r) out[r] = hsum(acc[r]);
}

// Two weight rows x four activation rows: eight accumulators; each weight block is loaded
// once for four rows and each activation block once for two. Per pair the same integer sum
// and the same fmadd as dot_q8_0, so every result equals the one-row kernel's bit for bit.
void dot_q8_0_tile(int64_t k, const std::byte* w_rows, size_t w_stride, const void* x_rows, size_t x_stride,
                   float* out) {
  const auto* w0 = reinterpret_cast<const BlockQ8_0*>(w_rows);
  const auto* w1 = reinterpret_cast<const BlockQ8_0*>(w_rows + w_stride);
  const ActBlockQ8_0* x[kDotRows];
  __m256 acc0[kDotRows];
  __m256 acc1[kDotRows];
  for (int r = 0; r < kDotRows; ++r) {
    x[r] = row_at<ActBlockQ8_0>(x_rows, x_stride, r);
    acc0[r] = _mm256_setzero_ps();
    acc1[r] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0[b].qs));
    const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1[b].qs));
    const __m256i abs0 = _mm256_sign_epi8(q0, q0);
    const __m256i abs1 = _mm256_sign_epi8(q1, q1);
    const float d0 = half_to_float(w0[b].d);
    const float d1 = half_to_float(w1[b].d);
    for (int r = 0; r < kDotRows; ++r) {
      const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][b].qs));
      const __m256i s0 = _mm256_madd_epi16(_mm256_maddubs_epi16(abs0, _mm256_sign_epi8(qx, q0)), ones);
      const __m256i s1 = _mm256_madd_epi16(_mm256_maddubs_epi16(abs1, _mm256_sign_epi8(qx, q1)), ones);
      const float dx = x[r][b].d;
      acc0[r] = _mm256_fmadd_ps(_mm256_set1_ps(d0 * dx), _mm256_cvtepi32_ps(s0), acc0[r]);
      acc1[r] = _mm256_fmadd_ps(_mm256_set1_ps(d1 * dx), _mm256_cvtepi32_ps(s1), acc1[r]);
    }
  }
  for (int r = 0; r < kDotRows; ++r) {
    out[r] = hsum(acc0[r]);
    out[kDotRows + r] = hsum(acc1[r]);
  }
}

// --- K-quants, for kRows = 1 (DotFn) or kDotRows (DotRowsFn) activation rows: one template,
// so a row of the four-row version is the one-row kernel's computation, bit for bit; the
// weight block is loaded, unpacked and its scales decoded once for all rows.

// Q4_K/Q5_K: 64 elements (sub-blocks 2c and 2c+1) per 32 quant bytes. The quants are
// unsigned (0..15 or 0..31), so vpmaddubsw takes them directly: pair sums stay within
// 2 * 31 * 127. vpmaddwd by the 6-bit scale (picked from the unpacked scales with vpshufb)
// then widens to int32. The min term, min[s] * (bsums[2s] + bsums[2s+1]) summed over
// sub-blocks, is a vpmaddwd of the mins against the activation's pair sums, accumulated in
// four float lanes apart from the main sum.
template <bool kFifthBit, typename Block, int kRows>
void dot_qk_4_5_n(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  const auto* w = reinterpret_cast<const Block*>(w_row);
  const BlockQ8K* x[kRows];
  __m256 acc[kRows];
  __m128 acc_min[kRows];
  #pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    x[r] = row_at<BlockQ8K>(x_rows, x_stride, r);
    acc[r] = _mm256_setzero_ps();
    acc_min[r] = _mm_setzero_ps();
  }
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i one = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < k / kQkK; ++b) {
    const __m256i scales_mins = unpack_scales_mins_i16(w[b].scales);
    const __m256i scales = _mm256_permute2x128_si256(scales_mins, scales_mins, 0x00);
    const __m128i mins = _mm256_extracti128_si256(scales_mins, 1);
    __m256i high_bits = _mm256_setzero_si256();
    if constexpr (kFifthBit) {
      high_bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qh));
    }
    __m256i sumi[kRows];
    #pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) sumi[r] = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs + 32 * c));
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
        const __m256i x_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][b].qs + 64 * c));
        const __m256i x_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][b].qs + 64 * c + 32));
        const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(q_lo, x_lo), scale_lo);
        const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(q_hi, x_hi), scale_hi);
        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(p_lo, p_hi));
      }
    }
    const float dw = half_to_float(w[b].d);
    const float dmin = half_to_float(w[b].dmin);
    #pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m128i min_sums = k_min_sums(mins, x[r][b].bsums);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(x[r][b].d * dw), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
      acc_min[r] = _mm_fmadd_ps(_mm_set1_ps(x[r][b].d * dmin), _mm_cvtepi32_ps(min_sums), acc_min[r]);
    }
  }
  #pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) out[r] = hsum(acc[r]) - hsum128(acc_min[r]);
}

// Q6_K: per half of 128 elements, 64 ql bytes and 32 qh bytes give four runs of 32 quants
// (0..63, unsigned for vpmaddubsw; pair sums within 2 * 63 * 127). A run spans two groups of
// 16, one per 128-bit half, so its scale vector holds one group scale per half (vpshufb of the
// half's eight sign-extended scales). The -32 offset is taken out afterwards with the
// activation's per-16 sums: sum (q - 32) x = sum q x - 32 sum x (one vpmaddwd per block).
template <int kRows>
void dot_q6_k_n(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  const auto* w = reinterpret_cast<const BlockQ6K*>(w_row);
  const BlockQ8K* x[kRows];
  __m256 acc[kRows];
  #pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    x[r] = row_at<BlockQ8K>(x_rows, x_stride, r);
    acc[r] = _mm256_setzero_ps();
  }
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  for (int64_t b = 0; b < k / kQkK; ++b) {
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    const __m256i half_scales[2] = {_mm256_permute2x128_si256(scales16, scales16, 0x00),
                                    _mm256_permute2x128_si256(scales16, scales16, 0x11)};
    __m256i sumi[kRows];
    #pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) sumi[r] = _mm256_setzero_si256();
    #pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = w[b].ql + 64 * half;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qh + 32 * half));
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
        const __m256i scales =
            _mm256_shuffle_epi8(half_scales[half], repeat_i16_control(2 * quarter, 2 * quarter + 1));
        #pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][b].qs + first));
          sumi[r] = _mm256_add_epi32(
              sumi[r], _mm256_madd_epi16(_mm256_maddubs_epi16(quarter_quants[quarter], xq), scales));
        }
      }
    }
    const float dw = half_to_float(w[b].d);
    #pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][b].bsums));
      // |offset lane| <= 2 * 128 * 2032: 32x that fits int32 with room.
      const __m256i offset = _mm256_madd_epi16(scales16, bsums);
      sumi[r] = _mm256_sub_epi32(sumi[r], _mm256_slli_epi32(offset, 5));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(x[r][b].d * dw), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
    }
  }
  #pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) out[r] = hsum(acc[r]);
}

template <bool kFifthBit, typename Block>
float dot_qk_4_5(int64_t k, const std::byte* w_row, const void* x_row) {
  float out;
  dot_qk_4_5_n<kFifthBit, Block, 1>(k, w_row, x_row, 0, &out);
  return out;
}

template <bool kFifthBit, typename Block>
void dot_qk_4_5_rows(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  dot_qk_4_5_n<kFifthBit, Block, kDotRows>(k, w_row, x_rows, x_stride, out);
}

float dot_q6_k(int64_t k, const std::byte* w_row, const void* x_row) {
  float out;
  dot_q6_k_n<1>(k, w_row, x_row, 0, &out);
  return out;
}

void dot_q6_k_rows(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  dot_q6_k_n<kDotRows>(k, w_row, x_rows, x_stride, out);
}

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
                                  dot_qk_4_5<false, BlockQ4K>,
                                  dot_qk_4_5<true, BlockQ5K>,
                                  dot_q6_k,
                                  dot_q8_0_rows,
                                  dot_qk_4_5_rows<false, BlockQ4K>,
                                  dot_qk_4_5_rows<true, BlockQ5K>,
                                  dot_q6_k_rows,
                                  dot_q8_0_tile,
                                  quantize_q8_0,
                                  quantize_q8_k,
                                  avx2_packed_kernels()};
  return kernels;
}

}  // namespace gufo::cpu::fast
