// Packed GEMM for prefill (dot_kernels.h, "Packed weight panels"): kPackedWeightRows weight rows
// are repacked into a small scratch so that the eight lanes of a vector hold eight different
// weight rows, and a kernel then multiplies the panel by up to kPackedActRows quantized
// activation rows. Compiled with -mavx2 -mfma -mf16c; see NOTE(avx2) in avx2_common.h.
//
// Why: the row kernels (dot_avx2.cpp) reduce each 32-element block to one number per (weight
// row, activation row) pair, paying a float convert, a scale product and an FMA per pair per
// block, plus vpsignb twice. With rows in lanes, a 4-byte piece of the activation is
// broadcast to all lanes and one vpmaddubsw serves eight weight rows; the block's integer sum
// arrives already split by weight row, and one convert and FMA per block serve all eight.
//
// Layouts (per kPackedWeightRows = 8 rows; "step" j covers elements 4j..4j+3 of a block, and
// a step vector holds those four quants of row 0, row 1, ..., row 7):
// - Q8_0, per block of 32: 8 step vectors of signed quants (256 B), then the 8 rows' scales as
//   f32 (32 B).
// - K-quants (Q4_K, Q5_K, Q6_K), per block of 256, as unsigned quants q in [0, 63] with
//   w = d * sc[g] * q - dmin * mn[g] for 16-element groups g:
//     64 step vectors (2048 B);
//     16 scale vectors, one per group g: row i's sc[g] in both int16 halves of lane i (512 B);
//     8 min vectors, one per group pair t: lane i holds int16 (mn[2t], mn[2t+1]) of row i
//       (256 B), for a vpmaddwd against the activation's adjacent bsums;
//     d and dmin of the 8 rows as f32 (64 B).
//   Q4_K/Q5_K: sc and mn are the 6-bit scale and min of the 32-element sub-block g / 2.
//   Q6_K: sc is the 8-bit group scale, and the -32 offset becomes mn = 32 * sc (subtracted in
//   int32 before the float step, as the row kernels do).
// The kernels' small loops carry `#pragma GCC unroll`: rolled, GCC keeps the per-row
// accumulators in memory rather than registers (half the speed).
// Tested against the reference mat_mul by tests/unit/backend/cpu_matmul_test.cpp.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/quant/avx2_common.h"
#include "backend/cpu/quant/dot_kernels.h"
#include "backend/cpu/quant/packed_panel_avx2.h"

namespace gufo::cpu::fast {
namespace {

using avx2::half_to_float;
using avx2::ScalesMins;
using avx2::unpack_scales_mins;
using quant::BlockQ4K;
using quant::BlockQ5K;
using quant::BlockQ6K;
using quant::BlockQ8_0;
using quant::BlockQ8K;
using quant::kQ8_0BlockElems;
using quant::kQkK;

constexpr int kLanes = kPackedWeightRows;
static_assert(kLanes == 8, "one 32-bit lane of a 256-bit vector per weight row");

// rows[i] holds dwords 0..7 of row i; afterwards rows[j] holds dword j of rows 0..7.
void transpose8x32(__m256i rows[8]) {
  __m256 lanes[8];
  for (int i = 0; i < 8; ++i) lanes[i] = _mm256_castsi256_ps(rows[i]);
  avx2::transpose8x8(lanes);
  for (int i = 0; i < 8; ++i) rows[i] = _mm256_castps_si256(lanes[i]);
}

// Stores 32 consecutive elements of each of the 8 rows (one vector per row) as 8 step vectors.
void store_steps(__m256i rows[8], std::byte* out) {
  transpose8x32(rows);
  for (int j = 0; j < 8; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * j), rows[j]);
}

template <typename Block>
const Block* block_of(const std::byte* w_rows, size_t w_stride, int row, int64_t b) {
  return reinterpret_cast<const Block*>(w_rows + static_cast<size_t>(row) * w_stride) + b;
}

void pack_q8_0(int64_t k, const std::byte* w_rows, size_t w_stride, std::byte* packed) {
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    std::byte* out = packed + b * kPackedQ8_0BlockBytes;
    __m256i rows[8];
    float d[8];
    for (int i = 0; i < kLanes; ++i) {
      const BlockQ8_0* blk = block_of<BlockQ8_0>(w_rows, w_stride, i, b);
      rows[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs));
      d[i] = half_to_float(blk->d);
    }
    store_steps(rows, out);
    std::memcpy(out + 256, d, sizeof d);
  }
}

// The per-block tail of the K layout: scale vectors, min vectors, d and dmin.
void store_k_scales(const int16_t sc[8][16], const int16_t mn[8][16], const float d[8], const float dmin[8],
                    std::byte* out) {
  int16_t scales[16][8][2];
  int16_t mins[8][8][2];
  for (int i = 0; i < kLanes; ++i) {
    for (int g = 0; g < 16; ++g) scales[g][i][0] = scales[g][i][1] = sc[i][g];
    for (int t = 0; t < 8; ++t) {
      mins[t][i][0] = mn[i][2 * t];
      mins[t][i][1] = mn[i][2 * t + 1];
    }
  }
  std::memcpy(out + panel::kKScales, scales, sizeof scales);
  std::memcpy(out + panel::kKMins, mins, sizeof mins);
  std::memcpy(out + panel::kKD, d, 8 * sizeof(float));
  std::memcpy(out + panel::kKDmin, dmin, 8 * sizeof(float));
}

template <bool kFifthBit, typename Block>
void pack_qk_4_5(int64_t k, const std::byte* w_rows, size_t w_stride, std::byte* packed) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i one = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < k / kQkK; ++b) {
    std::byte* out = packed + b * kPackedKBlockBytes;
    int16_t sc[8][16];
    int16_t mn[8][16];
    float d[8];
    float dmin[8];
    // Elements 64c..64c+31 are the low nibbles of qs[32c..32c+31], 64c+32.. the high ones.
    for (int c = 0; c < 4; ++c) {
      __m256i lo[8];
      __m256i hi[8];
      for (int i = 0; i < kLanes; ++i) {
        const Block* blk = block_of<Block>(w_rows, w_stride, i, b);
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs + 32 * c));
        lo[i] = _mm256_and_si256(q, low_mask);
        hi[i] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low_mask);
        if constexpr (kFifthBit) {
          // Bit s of qh[l] is the fifth bit of element 32s + l (see dot_avx2.cpp).
          const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qh));
          lo[i] = _mm256_or_si256(lo[i], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4));
          hi[i] = _mm256_or_si256(hi[i], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4));
        }
      }
      store_steps(lo, out + 32 * 8 * (2 * c));
      store_steps(hi, out + 32 * 8 * (2 * c + 1));
    }
    for (int i = 0; i < kLanes; ++i) {
      const Block* blk = block_of<Block>(w_rows, w_stride, i, b);
      const ScalesMins sm = unpack_scales_mins(blk->scales);
      for (int g = 0; g < 16; ++g) {
        sc[i][g] = sm.scale[g / 2];
        mn[i][g] = sm.min[g / 2];
      }
      d[i] = half_to_float(blk->d);
      dmin[i] = half_to_float(blk->dmin);
    }
    store_k_scales(sc, mn, d, dmin, out);
  }
}

void pack_q6_k(int64_t k, const std::byte* w_rows, size_t w_stride, std::byte* packed) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  for (int64_t b = 0; b < k / kQkK; ++b) {
    std::byte* out = packed + b * kPackedKBlockBytes;
    int16_t sc[8][16];
    int16_t mn[8][16];
    float d[8];
    // Per half of 128 elements: quarter e holds elements 128h + 32e .. +31 (see dot_avx2.cpp).
    for (int half = 0; half < 2; ++half) {
      __m256i quarters[4][8];
      for (int i = 0; i < kLanes; ++i) {
        const BlockQ6K* blk = block_of<BlockQ6K>(w_rows, w_stride, i, b);
        const uint8_t* ql = blk->ql + 64 * half;
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qh + 32 * half));
        quarters[0][i] =
            _mm256_or_si256(_mm256_and_si256(l0, low_mask), _mm256_slli_epi16(_mm256_and_si256(qh, two_bits), 4));
        quarters[1][i] = _mm256_or_si256(_mm256_and_si256(l1, low_mask),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two_bits), 4));
        quarters[2][i] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low_mask),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two_bits), 4));
        quarters[3][i] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low_mask),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two_bits), 4));
      }
      for (int e = 0; e < 4; ++e) store_steps(quarters[e], out + 32 * 8 * (4 * half + e));
    }
    for (int i = 0; i < kLanes; ++i) {
      const BlockQ6K* blk = block_of<BlockQ6K>(w_rows, w_stride, i, b);
      for (int g = 0; g < 16; ++g) {
        sc[i][g] = blk->scales[g];
        mn[i][g] = static_cast<int16_t>(32 * blk->scales[g]);
      }
      d[i] = half_to_float(blk->d);
    }
    store_k_scales(sc, mn, d, d, out);
  }
}

template <typename Block>
const Block* act_row(const void* x_rows, size_t x_stride, int r) {
  return reinterpret_cast<const Block*>(static_cast<const std::byte*>(x_rows) + static_cast<size_t>(r) * x_stride);
}

__m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// Q8_0: the weights are signed, so vpmaddubsw gets |w| and the activation with w's sign
// (as dot32_i8 in dot_avx2.cpp; pair sums stay within 2 * 128 * 127).
template <int kRows>
void gemm_q8_0_rows(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, float* out,
                    size_t out_stride) {
  const ActBlockQ8_0* x[kRows];
  __m256 acc[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    x[r] = act_row<ActBlockQ8_0>(x_rows, x_stride, r);
    acc[r] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const std::byte* blk = packed + b * kPackedQ8_0BlockBytes;
    __m256i sum[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) sum[r] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * j));
      const __m256i w_abs = _mm256_sign_epi8(w, w);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m256i xs = _mm256_sign_epi8(broadcast4(x[r][b].qs + 4 * j), w);
        sum[r] = _mm256_add_epi32(sum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, xs), ones));
      }
    }
    const __m256 dw = _mm256_loadu_ps(reinterpret_cast<const float*>(blk + 256));
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(x[r][b].d)), _mm256_cvtepi32_ps(sum[r]), acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) _mm256_storeu_ps(out + r * out_stride, acc[r]);
}

// K-quants: unsigned quants (<= 63) meet the signed activation directly in vpmaddubsw; two
// steps' pair sums add in int16 (<= 2 * 2 * 63 * 127 = 32004) before vpmaddwd applies the
// group scale. Per block and row, the integer sums are exact: |sum| <= 256 * 63 * 127 * 127.
template <bool kOffset, int kRows>
void gemm_k_rows(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, float* out,
                 size_t out_stride) {
  const BlockQ8K* x[kRows];
  __m256 acc[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    x[r] = act_row<BlockQ8K>(x_rows, x_stride, r);
    acc[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQkK; ++b) {
    const std::byte* blk = packed + b * kPackedKBlockBytes;
    __m256i sum[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) sum[r] = _mm256_setzero_si256();
    for (int g = 0; g < 16; ++g) {
      const __m256i scale = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + panel::kKScales + 32 * g));
#pragma GCC unroll 8
      for (int pair = 0; pair < 2; ++pair) {
        const int j = 4 * g + 2 * pair;
        const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * j));
        const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * (j + 1)));
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
          const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(w0, broadcast4(x[r][b].qs + 4 * j)),
                                             _mm256_maddubs_epi16(w1, broadcast4(x[r][b].qs + 4 * j + 4)));
          sum[r] = _mm256_add_epi32(sum[r], _mm256_madd_epi16(p, scale));
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[r] = panel::k_block_tail<kOffset>(blk, x[r][b], sum[r], acc[r]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) _mm256_storeu_ps(out + r * out_stride, acc[r]);
}

void gemm_q8_0(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, int n_rows, float* out,
               size_t out_stride) {
  switch (n_rows) {
    case 1:
      return gemm_q8_0_rows<1>(k, packed, x_rows, x_stride, out, out_stride);
    case 2:
      return gemm_q8_0_rows<2>(k, packed, x_rows, x_stride, out, out_stride);
    case 3:
      return gemm_q8_0_rows<3>(k, packed, x_rows, x_stride, out, out_stride);
    default:
      return gemm_q8_0_rows<4>(k, packed, x_rows, x_stride, out, out_stride);
  }
}

template <bool kOffset>
void gemm_k(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, int n_rows, float* out,
            size_t out_stride) {
  switch (n_rows) {
    case 1:
      return gemm_k_rows<kOffset, 1>(k, packed, x_rows, x_stride, out, out_stride);
    case 2:
      return gemm_k_rows<kOffset, 2>(k, packed, x_rows, x_stride, out, out_stride);
    case 3:
      return gemm_k_rows<kOffset, 3>(k, packed, x_rows, x_stride, out, out_stride);
    default:
      return gemm_k_rows<kOffset, 4>(k, packed, x_rows, x_stride, out, out_stride);
  }
}

}  // namespace

// Called by avx2_dot_kernels_unchecked() (dot_avx2.cpp).
PackedKernels avx2_packed_kernels() {
  return PackedKernels{.pack_q8_0 = pack_q8_0,
                       .pack_q4_k = pack_qk_4_5<false, BlockQ4K>,
                       .pack_q5_k = pack_qk_4_5<true, BlockQ5K>,
                       .pack_q6_k = pack_q6_k,
                       .gemm_q8_0 = gemm_q8_0,
                       .gemm_k = gemm_k<false>,
                       .gemm_q6_k = gemm_k<true>,
                       // NOTE(packed): matmul_bench 4096x4096, 2 threads, this VM (Zen 5), panels
                       // vs row kernels in GFLOP/s: Q8_0 at 8 rows 167 vs 81; Q4_K at 8 rows 115
                       // vs 152, at 16 rows 176 vs 157, at 32 rows 224 vs 167; Q6_K alike.
                       .min_rows_q8_0 = 8,
                       .min_rows_k = 16};
}

}  // namespace gufo::cpu::fast
