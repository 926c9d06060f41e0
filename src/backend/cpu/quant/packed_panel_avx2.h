// Where things sit in a packed K-quant panel block (the layout is described at the top of
// gemm_packed_avx2.cpp), and the per-block tail that the AVX2 and AVX-512 panel kernels share:
// the min term and the float accumulation. Include it from those kernel files only; see
// NOTE(avx2) in avx2_common.h (everything here is `static`).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/quant/dot_kernels.h"

namespace gufo::cpu::fast::panel {

// Byte offsets inside one kPackedKBlockBytes block of a K-quant panel.
inline constexpr size_t kKScales = 2048;          // 16 scale vectors of 32 bytes
inline constexpr size_t kKMins = kKScales + 512;  // 8 min vectors of 32 bytes
inline constexpr size_t kKD = kKMins + 256;       // d of the 8 rows, f32
inline constexpr size_t kKDmin = kKD + 32;        // dmin of the 8 rows, f32
static_assert(kKDmin + 32 == kPackedKBlockBytes, "the K panel layout must fill its block");

// acc + d * x.d * sums - dmin * x.d * mins, lane i for weight row i of the panel, where sums
// are the block's scaled integer dot products and mins the vpmaddwd of the rows' min vectors
// against the activation's adjacent per-16 sums (exact in int32), in the steps of
// dot_kernels.h ("Accumulation order"). kOffset (Q6_K, where dmin = d and the mins are the -32
// offset): acc + d * x.d * (sums - mins), the offset taken out exactly in int32 first.
template <bool kOffset>
static inline __m256 k_block_tail(const std::byte* blk, const quant::BlockQ8K& x, __m256i sums, __m256 acc) {
  __m256i mins = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int t = 0; t < 8; ++t) {
    int32_t bsum_pair;
    std::memcpy(&bsum_pair, x.bsums + 2 * t, sizeof bsum_pair);
    const __m256i mn = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kKMins + 32 * t));
    mins = _mm256_add_epi32(mins, _mm256_madd_epi16(mn, _mm256_set1_epi32(bsum_pair)));
  }
  const __m256 d = _mm256_loadu_ps(reinterpret_cast<const float*>(blk + kKD));
  const __m256 xd = _mm256_set1_ps(x.d);
  if constexpr (kOffset) {
    return _mm256_fmadd_ps(_mm256_mul_ps(d, xd), _mm256_cvtepi32_ps(_mm256_sub_epi32(sums, mins)), acc);
  } else {
    const __m256 dmin = _mm256_loadu_ps(reinterpret_cast<const float*>(blk + kKDmin));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(d, xd), _mm256_cvtepi32_ps(sums), acc);
    return _mm256_fnmadd_ps(_mm256_mul_ps(dmin, xd), _mm256_cvtepi32_ps(mins), acc);
  }
}

}  // namespace gufo::cpu::fast::panel
