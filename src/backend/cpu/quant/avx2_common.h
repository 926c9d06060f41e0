// Small AVX2 helpers shared by the files compiled with -mavx2 -mfma -mf16c (quant/dot_avx2.cpp,
// quant/gemm_packed_avx2.cpp, ops/attention_avx2.cpp). Include it from those files only.
//
// NOTE(avx2): every function here is `static` (internal linkage), so each AVX2 file gets its own
// copy. An ordinary inline function would be merged by the linker with copies compiled for the
// baseline CPU, and the AVX2 copy could then be the one a non-AVX2 caller runs; for the same
// reason these files call no inline function from a shared header (no std:: algorithms, no
// quant/half.h, no quant::unpack_scale_min_k4).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"

// For the kernels' small helpers that GCC would otherwise call out of line, passing vectors
// through memory (the K-quant weight quads ran 50% slower so).
#define GUFO_KERNEL_INLINE __attribute__((always_inline)) inline

namespace gufo::cpu::avx2 {

static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float half_to_float(uint16_t bits) { return _cvtsh_ss(bits); }

// The eight 6-bit scales (scale[0..7]) and eight 6-bit mins (min[0..7]) of a Q4_K/Q5_K block,
// unpacked from its 12 packed bytes with a few 32-bit masks and shifts (the packing is that of
// quant::unpack_scale_min_k4, see quant/blocks.h: sub-blocks 0-3 in the low 6 bits of bytes
// 0-3 / 4-7, sub-blocks 4-7 split between nibbles of bytes 8-11 and the top two bits of bytes
// 0-7).
struct ScalesMins {
  uint8_t scale[8];
  uint8_t min[8];
};

// The four 32-bit words behind ScalesMins: scales 0-3, scales 4-7, mins 0-3, mins 4-7.
static inline void unpack_scales_mins_u32(const uint8_t* packed, uint32_t out[4]) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f;
  constexpr uint32_t kLow4 = 0x0f0f0f0f;
  constexpr uint32_t kLow2 = 0x03030303;
  uint32_t in[3];
  std::memcpy(in, packed, sizeof in);
  out[0] = in[0] & kLow6;                                           // scales 0-3
  out[1] = (in[2] & kLow4) | (((in[0] >> 6) & kLow2) << 4);         // scales 4-7
  out[2] = in[1] & kLow6;                                           // mins 0-3
  out[3] = ((in[2] >> 4) & kLow4) | (((in[1] >> 6) & kLow2) << 4);  // mins 4-7
}

static inline ScalesMins unpack_scales_mins(const uint8_t* packed) {
  uint32_t out[4];
  unpack_scales_mins_u32(packed, out);
  ScalesMins result;
  std::memcpy(&result, out, sizeof result);
  return result;
}

// The same as sixteen int16 lanes: scales 0-7 in lanes 0-7, mins 0-7 in lanes 8-15, so that
// the kernels pick them with vector shuffles rather than byte loads and broadcasts.
static inline __m256i unpack_scales_mins_i16(const uint8_t* packed) {
  uint32_t out[4];
  unpack_scales_mins_u32(packed, out);
  return _mm256_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(out[0]), static_cast<int>(out[1]),
                                             static_cast<int>(out[2]), static_cast<int>(out[3])));
}

// A vpshufb control that repeats int16 lane `lo` of each 128-bit half across the low half and
// lane `hi` across the high half (built from int64 constants, which GCC folds into one load).
static inline __m256i repeat_i16_control(int lo, int hi) {
  const auto repeat = [](int word) {
    const uint64_t pick = static_cast<uint64_t>(((2 * word + 1) << 8) | (2 * word));
    return static_cast<long long>(pick * 0x0001000100010001ull);
  };
  return _mm256_setr_epi64x(repeat(lo), repeat(lo), repeat(hi), repeat(hi));
}

// The Q4_K/Q5_K min term per pair of sub-blocks: lane t holds mins[2t] * (bsums[4t] +
// bsums[4t + 1]) + mins[2t + 1] * (bsums[4t + 2] + bsums[4t + 3]), with the eight 6-bit mins
// as int16 lanes and the activation block's 16 per-16 sums (exact in int32).
static inline __m128i k_min_sums(__m128i mins, const int16_t* bsums) {
  const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums));
  const __m128i pair_sums = _mm_hadd_epi16(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
  return _mm_madd_epi16(mins, pair_sums);
}

// The sum of four or eight int32 lanes (exact: integer adds in any order).
static inline int32_t hsum_i32(__m128i s) {
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}
static inline int32_t hsum_i32(__m256i v) {
  return hsum_i32(_mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

// The sums of the eight int32 lanes of a, b, c and d as lanes 0..3.
static inline __m128i hsum_i32x4(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i abcd = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
  return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

// The sums of the four int32 lanes of a, b, c and d as lanes 0..3.
static inline __m128i hsum_i32x4(__m128i a, __m128i b, __m128i c, __m128i d) {
  return _mm_hadd_epi32(_mm_hadd_epi32(a, b), _mm_hadd_epi32(c, d));
}

// a * b + c rounded once: the step every quantized kernel accumulates with (dot_kernels.h,
// "Accumulation order").
static inline float fma1(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

// NOTE(quads): decode streams every weight from memory once. The weight-quad kernels
// (DotWeightsFn) spend more instructions per byte than a one-row dot (the per-block
// reductions), so the core's window holds fewer loads in flight, and with the hardware
// prefetchers alone the output projection of a 0.6B model (1024 x 151936) ran at half the
// bandwidth. So each quad prefetches the bytes it is reading, `ahead` bytes further on: the
// same place in a quad of rows ~12 KiB later (whole quads, at least the next one), far enough
// to hide DRAM latency, near enough to stay in L1/L2 until read.
static inline size_t quad_prefetch_distance(size_t w_stride) {
  constexpr size_t kTarget = 12 * 1024;
  const size_t quad = 4 * w_stride;
  return (kTarget + quad - 1) / quad * quad;
}
static inline void prefetch_ahead(const void* at, size_t bytes, size_t ahead) {
  const char* p = static_cast<const char*>(at) + ahead;
  for (size_t offset = 0; offset < bytes; offset += 64) _mm_prefetch(p + offset, _MM_HINT_T0);
}

// The block scales of four weight blocks (lanes 0..3) from their f16 bits.
static inline __m128 four_halves(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
  return _mm_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(a), static_cast<int16_t>(b), static_cast<int16_t>(c),
                                     static_cast<int16_t>(d), 0, 0, 0, 0));
}

// Q6_K has no min term (its -32 offset is inside S).
template <typename Block>
constexpr bool kHasMins = !std::is_same_v<Block, quant::BlockQ6K>;

template <typename Block>
static inline float dmin_of(const Block& w) {
  if constexpr (kHasMins<Block>) {
    return half_to_float(w.dmin);
  } else {
    return 0.0f;
  }
}

// The float steps of one K block for four accumulators (lanes), given x.d * d, x.d * dmin
// and the integer sums S and M per lane, in the order of dot_kernels.h.
template <bool kMins>
static inline __m128 k_steps4(__m128 acc, __m128 xd_d, __m128 xd_dmin, __m128i s, __m128i m) {
  acc = _mm_fmadd_ps(xd_d, _mm_cvtepi32_ps(s), acc);
  if constexpr (kMins) acc = _mm_fnmadd_ps(xd_dmin, _mm_cvtepi32_ps(m), acc);
  return acc;
}

// rows[i] holds 8 elements of row i; afterwards rows[m] holds element m of rows 0..7.
static inline void transpose8x8(__m256 rows[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(rows[0], rows[1]);
  const __m256 t1 = _mm256_unpackhi_ps(rows[0], rows[1]);
  const __m256 t2 = _mm256_unpacklo_ps(rows[2], rows[3]);
  const __m256 t3 = _mm256_unpackhi_ps(rows[2], rows[3]);
  const __m256 t4 = _mm256_unpacklo_ps(rows[4], rows[5]);
  const __m256 t5 = _mm256_unpackhi_ps(rows[4], rows[5]);
  const __m256 t6 = _mm256_unpacklo_ps(rows[6], rows[7]);
  const __m256 t7 = _mm256_unpackhi_ps(rows[6], rows[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44);
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44);
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  rows[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  rows[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  rows[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  rows[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  rows[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  rows[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  rows[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  rows[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

static inline float hsum128(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace gufo::cpu::avx2
