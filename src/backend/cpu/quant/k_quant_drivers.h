// The drivers of the K-quant row kernels, written once over an instruction set's integer block
// sums: one activation row (DotFn), four activation rows (DotRowsFn) and four weight rows
// against one activation row (DotWeightsFn), the last two stepping four accumulators in the
// lanes of one vector. All take the float steps of dot_kernels.h ("Accumulation order").
// Include it from the AVX2 and AVX-512 kernel files only; see NOTE(avx2) in avx2_common.h
// (everything here is `static`).
//
// An Isa provides:
//   using Sums = ...;   // S of one weight block against one activation block, in int32 lanes
//   template <typename Block, int kRows>
//   static void block_sums(const Block& w, const quant::BlockQ8K* const* x, Sums* sums, __m128i* mins);
//                       // S against x[0..kRows), and the min term M in four int32 lanes
//   static int32_t sum(Sums s);          // the lanes' sum (exact)
//   static __m128i sum4(const Sums* s);  // lane i: the sum of s[i], i < 4
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/quant/avx2_common.h"
#include "backend/cpu/quant/dot_kernels.h"

namespace gufo::cpu::fast::k_drivers {

template <typename Isa, typename Block>
static float dot(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* w = reinterpret_cast<const Block*>(w_row);
  const auto* x = static_cast<const quant::BlockQ8K*>(x_row);
  float acc = 0.0f;
  for (int64_t b = 0; b < k / quant::kQkK; ++b) {
    const quant::BlockQ8K* xb[1] = {&x[b]};
    typename Isa::Sums sums;
    __m128i mins = _mm_setzero_si128();
    Isa::template block_sums<Block, 1>(w[b], xb, &sums, &mins);
    acc = avx2::fma1(x[b].d * avx2::half_to_float(w[b].d), static_cast<float>(Isa::sum(sums)), acc);
    if constexpr (avx2::kHasMins<Block>) {
      acc = avx2::fma1(-(x[b].d * avx2::dmin_of(w[b])), static_cast<float>(avx2::hsum_i32(mins)), acc);
    }
  }
  return acc;
}

template <typename Isa, typename Block>
static void dot_rows(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out) {
  static_assert(kDotRows == 4, "one float lane per activation row of an __m128");
  const auto* w = reinterpret_cast<const Block*>(w_row);
  const quant::BlockQ8K* x[4];
  for (int r = 0; r < 4; ++r) {
    x[r] = reinterpret_cast<const quant::BlockQ8K*>(static_cast<const std::byte*>(x_rows) +
                                                    static_cast<size_t>(r) * x_stride);
  }
  __m128 acc = _mm_setzero_ps();  // lane r: activation row r
  for (int64_t b = 0; b < k / quant::kQkK; ++b) {
    const quant::BlockQ8K* xb[4] = {&x[0][b], &x[1][b], &x[2][b], &x[3][b]};
    typename Isa::Sums sums[4];
    __m128i mins[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
    Isa::template block_sums<Block, 4>(w[b], xb, sums, mins);
    const __m128 xd = _mm_setr_ps(xb[0]->d, xb[1]->d, xb[2]->d, xb[3]->d);
    acc = avx2::k_steps4<avx2::kHasMins<Block>>(acc, _mm_mul_ps(xd, _mm_set1_ps(avx2::half_to_float(w[b].d))),
                                                _mm_mul_ps(xd, _mm_set1_ps(avx2::dmin_of(w[b]))), Isa::sum4(sums),
                                                avx2::hsum_i32x4(mins[0], mins[1], mins[2], mins[3]));
  }
  _mm_storeu_ps(out, acc);
}

template <typename Isa, typename Block>
static void dot_weights(int64_t k, const std::byte* w_rows, size_t w_stride, const void* x_row, float* out) {
  static_assert(kDotWeights == 4, "one float lane per weight row of an __m128");
  const Block* w[4];
  for (int i = 0; i < 4; ++i) w[i] = reinterpret_cast<const Block*>(w_rows + static_cast<size_t>(i) * w_stride);
  const auto* x = static_cast<const quant::BlockQ8K*>(x_row);
  const size_t ahead = avx2::quad_prefetch_distance(w_stride);
  __m128 acc = _mm_setzero_ps();  // lane i: weight row i
  for (int64_t b = 0; b < k / quant::kQkK; ++b) {
    const quant::BlockQ8K* xb[1] = {&x[b]};
    typename Isa::Sums sums[4];
    __m128i mins[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      avx2::prefetch_ahead(&w[i][b], sizeof(Block), ahead);
      Isa::template block_sums<Block, 1>(w[i][b], xb, &sums[i], &mins[i]);
    }
    const __m128 xd = _mm_set1_ps(x[b].d);
    __m128 dmin = _mm_setzero_ps();
    if constexpr (avx2::kHasMins<Block>)
      dmin = avx2::four_halves(w[0][b].dmin, w[1][b].dmin, w[2][b].dmin, w[3][b].dmin);
    acc = avx2::k_steps4<avx2::kHasMins<Block>>(
        acc, _mm_mul_ps(xd, avx2::four_halves(w[0][b].d, w[1][b].d, w[2][b].d, w[3][b].d)), _mm_mul_ps(xd, dmin),
        Isa::sum4(sums), avx2::hsum_i32x4(mins[0], mins[1], mins[2], mins[3]));
  }
  _mm_storeu_ps(out, acc);
}

}  // namespace gufo::cpu::fast::k_drivers
