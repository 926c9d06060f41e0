// Integer MMA (mma.sync .s8, exact int32 sums) for the quantized matmuls (mat_mul_q.cu,
// mat_mul_q_staged.cu). HIP builds take the kernels' portable paths and never call these.
#pragma once

#include <cstdint>

namespace gufo::cuda {

// c = A (16 x 32, rows of int8) x B (32 x 8), exact int32. Fragment layout of PTX
// mma.m16n8k32 .s8: a[0] row g cols 4t.., a[1] row g+8, a[2] row g cols 16+4t.., a[3] row
// g+8 cols 16+4t..; b[0] rows 4t.. col g, b[1] rows 16+4t..; c[0..1] row g cols 2t, 2t+1,
// c[2..3] row g+8 (g = lane / 4, t = lane % 4).
[[maybe_unused]] __device__ inline void mma_k32(int (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if !defined(GUFO_HIP)
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(0));
#endif
}

// The two k-halves of mma_k32 separately (m16n8k16 .s8: a[0] row g, a[1] row g+8, b col g).
[[maybe_unused]] __device__ inline void mma_k16(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b) {
#if !defined(GUFO_HIP)
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};\n"
               : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
               : "r"(a0), "r"(a1), "r"(b), "r"(0));
#endif
}

// f(rm, tn, i, e) for each accumulator element of a lane: row tile rm, token tile tn, fragment
// element i (row g + 8 * (i / 2), token 2t + i % 2), flat index e.
template <int kRm, int kTn, class F>
__device__ __forceinline__ void for_each_element(F&& f) {
#pragma unroll
  for (int rm = 0; rm < kRm; ++rm) {
#pragma unroll
    for (int tn = 0; tn < kTn; ++tn) {
#pragma unroll
      for (int i = 0; i < 4; ++i) f(rm, tn, i, (rm * kTn + tn) * 4 + i);
    }
  }
}

// Chunk c of a super-block (T: quant_traits.cuh) through the MMAs of kRm weight tiles `a` by
// kTn activation tiles `b`: each element's integer sum s += the chunk's scale times its product
// (Q6_K: a scale per 16-element half, so two k16 MMAs).
template <class T, int kRm, int kTn>
__device__ __forceinline__ void add_scaled_products(const uint32_t (&a)[kRm][4], const uint32_t (&b)[kTn][2],
                                                    const typename T::RowBlock (&rb)[kRm][2], int c,
                                                    int (&s)[kRm * kTn * 4]) {
#pragma unroll
  for (int rm = 0; rm < kRm; ++rm) {
#pragma unroll
    for (int tn = 0; tn < kTn; ++tn) {
      int* se = s + (rm * kTn + tn) * 4;
      if constexpr (T::kSplitHalves) {
        int lo[4], hi[4];
        mma_k16(lo, a[rm][0], a[rm][1], b[tn][0]);
        mma_k16(hi, a[rm][2], a[rm][3], b[tn][1]);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          se[i] += T::scale(rb[rm][i / 2], c, 0) * lo[i] + T::scale(rb[rm][i / 2], c, 1) * hi[i];
      } else {
        int prod[4];
        mma_k32(prod, a[rm], b[tn]);
#pragma unroll
        for (int i = 0; i < 4; ++i) se[i] += T::scale(rb[rm][i / 2], c, 0) * prod[i];
      }
    }
  }
}

}  // namespace gufo::cuda
