// Scalar dequantizers for F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K: one element at a time, indexed
// the way ggml-common.h lays the block out. The float operations and their order match
// ggml's dequantize_row_* so results are bit-identical (this file is built without FP
// contraction, see CMakeLists.txt). Tested by tests/unit/quant/dequantize_test.cpp.

#include "core/check.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace gufo::quant {

void dequantize_row_f16(const uint16_t* src, float* dst, int64_t n_elems) {
  for (int64_t i = 0; i < n_elems; ++i) dst[i] = fp16_to_fp32(src[i]);
}

void dequantize_row_bf16(const uint16_t* src, float* dst, int64_t n_elems) {
  for (int64_t i = 0; i < n_elems; ++i) dst[i] = bf16_to_fp32(src[i]);
}

void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t n_elems) {
  GUFO_CHECK(n_elems % kQ8_0BlockElems == 0);
  const int64_t n_blocks = n_elems / kQ8_0BlockElems;
  for (int64_t block_idx = 0; block_idx < n_blocks; ++block_idx) {
    const BlockQ8_0& block = src[block_idx];
    const float d = fp16_to_fp32(block.d);
    float* out = dst + block_idx * kQ8_0BlockElems;
    for (int i = 0; i < kQ8_0BlockElems; ++i) out[i] = block.qs[i] * d;
  }
}

// Q4_K and Q5_K share the sub-block geometry: element e lives in sub-block e / 32, and
// 32-byte chunk c = e / 64 of qs holds sub-block 2c in its low nibbles, 2c + 1 in its high.
namespace {

int q4_k_low_bits(const uint8_t* qs, int elem) {
  const int chunk = elem / 64;
  const int lane = elem % 32;
  const bool high_nibble = (elem % 64) >= 32;
  const uint8_t byte = qs[chunk * 32 + lane];
  return high_nibble ? (byte >> 4) : (byte & 0x0f);
}

}  // namespace

void dequantize_row_q4_k(const BlockQ4K* src, float* dst, int64_t n_elems) {
  GUFO_CHECK(n_elems % kQkK == 0);
  const int64_t n_blocks = n_elems / kQkK;
  for (int64_t block_idx = 0; block_idx < n_blocks; ++block_idx) {
    const BlockQ4K& block = src[block_idx];
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    float* out = dst + block_idx * kQkK;
    for (int sub_block = 0; sub_block < kQkK / 32; ++sub_block) {
      const ScaleMin sm = unpack_scale_min_k4(sub_block, block.scales);
      const float sub_scale = d * sm.scale;
      const float sub_min = dmin * sm.min;
      for (int i = 0; i < 32; ++i) {
        const int elem = sub_block * 32 + i;
        out[elem] = sub_scale * q4_k_low_bits(block.qs, elem) - sub_min;
      }
    }
  }
}

void dequantize_row_q5_k(const BlockQ5K* src, float* dst, int64_t n_elems) {
  GUFO_CHECK(n_elems % kQkK == 0);
  const int64_t n_blocks = n_elems / kQkK;
  for (int64_t block_idx = 0; block_idx < n_blocks; ++block_idx) {
    const BlockQ5K& block = src[block_idx];
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    float* out = dst + block_idx * kQkK;
    for (int sub_block = 0; sub_block < kQkK / 32; ++sub_block) {
      const ScaleMin sm = unpack_scale_min_k4(sub_block, block.scales);
      const float sub_scale = d * sm.scale;
      const float sub_min = dmin * sm.min;
      for (int i = 0; i < 32; ++i) {
        const int elem = sub_block * 32 + i;
        const int high_bit = (block.qh[i] >> sub_block) & 1;
        const int q = q4_k_low_bits(block.qs, elem) + 16 * high_bit;
        out[elem] = sub_scale * q - sub_min;
      }
    }
  }
}

// Q6_K: element e sits in half h = e / 128 (64 ql bytes and 32 qh bytes each); within the
// half, quarter k = (e % 128) / 32 takes the low (k < 2) or high nibble of ql byte
// h*64 + (k % 2)*32 + lane, and bits 2k..2k+1 of qh byte h*32 + lane give bits 4-5.
void dequantize_row_q6_k(const BlockQ6K* src, float* dst, int64_t n_elems) {
  GUFO_CHECK(n_elems % kQkK == 0);
  const int64_t n_blocks = n_elems / kQkK;
  for (int64_t block_idx = 0; block_idx < n_blocks; ++block_idx) {
    const BlockQ6K& block = src[block_idx];
    const float d = fp16_to_fp32(block.d);
    float* out = dst + block_idx * kQkK;
    for (int elem = 0; elem < kQkK; ++elem) {
      const int half = elem / 128;
      const int quarter = (elem % 128) / 32;
      const int lane = elem % 32;
      const uint8_t low_byte = block.ql[half * 64 + (quarter % 2) * 32 + lane];
      const int low = quarter < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
      const int high = (block.qh[half * 32 + lane] >> (2 * quarter)) & 3;
      const int q = (low | (high << 4)) - 32;
      // NOTE(q6_k): (d * scale) first, then * q: ggml's order, needed for identical rounding.
      const int8_t scale = block.scales[elem / 16];
      out[elem] = d * scale * q;
    }
  }
}

}  // namespace gufo::quant
