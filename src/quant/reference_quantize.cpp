// Scalar quantizers for F16, BF16 (round-to-nearest-even) and Q8_0 (quantize_row_q8_0_ref:
// d = max|x| / 127, q = roundf(x / d)). K-quants live in reference_quantize_k.cpp.
// Tested by tests/unit/quant (known answers, ggml digests, round-trip bounds).
#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace gufo::quant {

void quantize_row_f16(const float* src, uint16_t* dst, int64_t n_elems) {
  for (int64_t i = 0; i < n_elems; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void quantize_row_bf16(const float* src, uint16_t* dst, int64_t n_elems) {
  for (int64_t i = 0; i < n_elems; ++i) dst[i] = fp32_to_bf16(src[i]);
}

namespace {

// roundf() into int8. For finite, in-range input |scaled| <= 127 (plus an ulp or two), so
// this is plain rounding. ggml's C cast of a float beyond int8 is undefined behaviour; pin
// what x86-64 builds of ggml do (cvttss2si to int32, INT_MIN when out of int32 range or not
// finite, then keep the low byte), so even garbage input gives the same bytes as ggml there.
// NOTE(q8_0): that case needs a NaN/inf input (which quant.h rejects) or 1/d overflowing
// (max|x| < ~3.7e-37, where the fp16 scale is 0 and the quants do not matter).
int8_t round_to_int8(float scaled) {
  const float rounded = std::round(scaled);
  // NOTE(q8_0): 2^31 bounds the int32 range of cvttss2si.
  const bool fits_int32 = rounded >= -2147483648.0f && rounded < 2147483648.0f;
  const int32_t as_int32 = fits_int32 ? static_cast<int32_t>(rounded) : INT32_MIN;
  return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint32_t>(as_int32) & 0xffu));
}

}  // namespace

void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t n_elems) {
  GUFO_CHECK(n_elems % kQ8_0BlockElems == 0);
  const int64_t n_blocks = n_elems / kQ8_0BlockElems;
  for (int64_t block_idx = 0; block_idx < n_blocks; ++block_idx) {
    const float* x = src + block_idx * kQ8_0BlockElems;
    float amax = 0;
    for (int i = 0; i < kQ8_0BlockElems; ++i) {
      const float ax = std::fabs(x[i]);
      amax = amax > ax ? amax : ax;  // ggml's MAX(): a NaN is picked up, not skipped
    }
    // NOTE(q8_0): 127, not 128: the scale maps max|x| to +-127 so the grid is symmetric.
    const float d = amax / 127;
    const float inverse_d = d != 0 ? 1.0f / d : 0.0f;
    BlockQ8_0& block = dst[block_idx];
    block.d = fp32_to_fp16(d);
    for (int i = 0; i < kQ8_0BlockElems; ++i) block.qs[i] = round_to_int8(x[i] * inverse_d);
  }
}

}  // namespace gufo::quant
