// Scalar K-quantizers Q4_K, Q5_K, Q6_K, byte-identical to ggml's quantize_row_q{4,5,6}_K_ref
// (the path llama.cpp's `quantize` takes without an imatrix). Layouts: quant/blocks.h.
// Each super-block: search a float scale (and min) per sub-block, quantize those to 6 or 8
// bits against one fp16 super-scale, then requantize every element with the stored scales.
// Tested by tests/unit/quant/ggml_golden_test.cpp and round_trip_test.cpp.
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "quant/half.h"
#include "quant/k_quant_search.h"
#include "quant/reference.h"

namespace gufo::quant {
namespace {

using detail::nearest_int;

// Q4_K/Q5_K search parameters, per ggml's reference quantizers: trial inverse scales
// (rmin + rdelta * step + q_max) / range for step = 0..n_steps.
struct SearchParams {
  int q_max;
  float rmin;
  float rdelta;
  int n_steps;
};
// NOTE(k_quant): Q4_K tries 14.0..16.0 levels in 0.1 steps, Q5_K 30.5..32.0 in 0.1 steps.
constexpr SearchParams kQ4KSearch = {15, -1.f, 0.1f, 20};
constexpr SearchParams kQ5KSearch = {31, -0.5f, 0.1f, 15};

// Stores 6-bit scale and min of sub-block j in the 12-byte K_SCALE_SIZE layout that
// unpack_scale_min_k4 reads. Sub-blocks 0-3 must be written before 4-7 (4-7 OR into 0-7).
void pack_scale_min_k4(int sub_block, uint8_t scale, uint8_t min, uint8_t* scales) {
  if (sub_block < 4) {
    scales[sub_block] = scale;
    scales[sub_block + 4] = min;
  } else {
    scales[sub_block + 4] = static_cast<uint8_t>((scale & 0x0f) | ((min & 0x0f) << 4));
    scales[sub_block - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
    scales[sub_block] |= static_cast<uint8_t>((min >> 4) << 6);
  }
}

// The part Q4_K and Q5_K share: fills d, dmin and scales of a super-block from x[256] and
// writes the final quant of every element, in [0, params.q_max], to levels[256].
void quantize_scales_mins_k(const float* x, const SearchParams& params, uint16_t* d_out, uint16_t* dmin_out,
                            uint8_t* packed_scales, uint8_t* levels) {
  constexpr int kSubBlocks = kQkK / 32;
  float scales[kSubBlocks];
  float mins[kSubBlocks];
  float max_scale = 0;  // scales are >= 0 since the min is subtracted
  float max_min = 0;
  for (int sub_block = 0; sub_block < kSubBlocks; ++sub_block) {
    const float* xs = x + 32 * sub_block;
    // Weight each element by rms(sub-block) + |x|: large values matter more.
    float sum_x2 = 0;
    for (int i = 0; i < 32; ++i) sum_x2 += xs[i] * xs[i];
    const float av_x = std::sqrt(sum_x2 / 32);
    float weights[32];
    for (int i = 0; i < 32; ++i) weights[i] = av_x + std::fabs(xs[i]);
    scales[sub_block] = detail::search_scale_min(32, params.q_max, xs, weights, levels + 32 * sub_block,
                                                 &mins[sub_block], params.rmin, params.rdelta, params.n_steps);
    if (scales[sub_block] > max_scale) max_scale = scales[sub_block];
    if (mins[sub_block] > max_min) max_min = mins[sub_block];
  }

  // Quantize scales and mins to 6 bits against the largest of each.
  // NOTE(k_quant): 63 = 2^6 - 1, the largest 6-bit code.
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int sub_block = 0; sub_block < kSubBlocks; ++sub_block) {
    // ggml stores nearest_int() into a uint8_t before clamping: keep that wrap-around.
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[sub_block]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[sub_block]));
    if (ls > 63) ls = 63;
    if (lm > 63) lm = 63;
    pack_scale_min_k4(sub_block, ls, lm, packed_scales);
  }
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);

  // Requantize against the scales as stored, so the quants fit what a reader will decode.
  for (int sub_block = 0; sub_block < kSubBlocks; ++sub_block) {
    const ScaleMin sm = unpack_scale_min_k4(sub_block, packed_scales);
    const float d = fp16_to_fp32(*d_out) * sm.scale;
    if (d == 0) continue;  // keep the search's levels, as ggml does
    const float dm = fp16_to_fp32(*dmin_out) * sm.min;
    for (int i = 0; i < 32; ++i) {
      const int l = nearest_int((x[32 * sub_block + i] + dm) / d);
      levels[32 * sub_block + i] = static_cast<uint8_t>(l < 0 ? 0 : (l > params.q_max ? params.q_max : l));
    }
  }
}

void quantize_block_q4_k(const float* x, BlockQ4K& block) {
  uint8_t levels[kQkK];
  quantize_scales_mins_k(x, kQ4KSearch, &block.d, &block.dmin, block.scales, levels);
  // 32-byte chunk c: low nibbles = sub-block 2c, high nibbles = sub-block 2c + 1.
  for (int chunk = 0; chunk < kQkK / 64; ++chunk) {
    for (int lane = 0; lane < 32; ++lane) {
      const uint8_t low = levels[64 * chunk + lane];
      const uint8_t high = levels[64 * chunk + 32 + lane];
      block.qs[32 * chunk + lane] = static_cast<uint8_t>(low | (high << 4));
    }
  }
}

void quantize_block_q5_k(const float* x, BlockQ5K& block) {
  uint8_t levels[kQkK];
  quantize_scales_mins_k(x, kQ5KSearch, &block.d, &block.dmin, block.scales, levels);
  // Low 4 bits as in Q4_K; bit 4 of element 32 * j + lane goes to bit j of qh[lane].
  std::memset(block.qh, 0, sizeof block.qh);
  for (int chunk = 0; chunk < kQkK / 64; ++chunk) {
    for (int lane = 0; lane < 32; ++lane) {
      const int low = levels[64 * chunk + lane];
      const int high = levels[64 * chunk + 32 + lane];
      block.qs[32 * chunk + lane] = static_cast<uint8_t>((low & 0x0f) | ((high & 0x0f) << 4));
      block.qh[lane] |= static_cast<uint8_t>(((low >> 4) << (2 * chunk)) | ((high >> 4) << (2 * chunk + 1)));
    }
  }
}

void quantize_block_q6_k(const float* x, BlockQ6K& block) {
  constexpr int kSubBlocks = kQkK / 16;
  int8_t levels[kQkK];  // in [0, 63]; 32 means zero
  float scales[kSubBlocks];
  float max_scale = 0;  // signed: the sub-block scale of largest magnitude
  float max_abs_scale = 0;
  for (int sub_block = 0; sub_block < kSubBlocks; ++sub_block) {
    // NOTE(q6_k): 32 = half of the 64 levels; search_symmetric_scale is make_qx_quants.
    scales[sub_block] = detail::search_symmetric_scale(16, 32, x + 16 * sub_block, levels + 16 * sub_block);
    const float abs_scale = std::fabs(scales[sub_block]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[sub_block];
    }
  }
  // NOTE(q6_k): 1e-15 is ggml's GROUP_MAX_EPS; such a super-block is stored as all zero bytes.
  if (max_abs_scale < 1e-15f) {
    std::memset(&block, 0, sizeof block);
    return;
  }

  // NOTE(q6_k): -128 maps the largest sub-block scale to int8 -128 (the sign follows ggml).
  const float iscale = -128.f / max_scale;
  block.d = fp32_to_fp16(1 / iscale);
  for (int sub_block = 0; sub_block < kSubBlocks; ++sub_block) {
    const int l = nearest_int(iscale * scales[sub_block]);
    block.scales[sub_block] = static_cast<int8_t>(l < 127 ? l : 127);
  }

  // Requantize against the stored scales.
  for (int sub_block = 0; sub_block < kSubBlocks; ++sub_block) {
    const float d = fp16_to_fp32(block.d) * block.scales[sub_block];
    if (d == 0) continue;
    for (int i = 0; i < 16; ++i) {
      int l = nearest_int(x[16 * sub_block + i] / d);
      l = l < -32 ? -32 : (l > 31 ? 31 : l);
      levels[16 * sub_block + i] = static_cast<int8_t>(l + 32);
    }
  }

  // Element e = 128 h + 32 k + lane: low nibble into ql[64 h + 32 (k % 2) + lane] (k < 2 low
  // half of the byte, k >= 2 high half), bits 4-5 into bits 2k..2k+1 of qh[32 h + lane].
  for (int half = 0; half < 2; ++half) {
    const int8_t* lv = levels + 128 * half;
    uint8_t* ql = block.ql + 64 * half;
    uint8_t* qh = block.qh + 32 * half;
    for (int lane = 0; lane < 32; ++lane) {
      ql[lane] = static_cast<uint8_t>((lv[lane] & 0x0f) | ((lv[lane + 64] & 0x0f) << 4));
      ql[lane + 32] = static_cast<uint8_t>((lv[lane + 32] & 0x0f) | ((lv[lane + 96] & 0x0f) << 4));
      qh[lane] = static_cast<uint8_t>((lv[lane] >> 4) | ((lv[lane + 32] >> 4) << 2) | ((lv[lane + 64] >> 4) << 4) |
                                      ((lv[lane + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void quantize_row_q4_k(const float* src, BlockQ4K* dst, int64_t n_elems) {
  GUFO_CHECK(n_elems % kQkK == 0);
  for (int64_t block_idx = 0; block_idx < n_elems / kQkK; ++block_idx) {
    quantize_block_q4_k(src + block_idx * kQkK, dst[block_idx]);
  }
}

void quantize_row_q5_k(const float* src, BlockQ5K* dst, int64_t n_elems) {
  GUFO_CHECK(n_elems % kQkK == 0);
  for (int64_t block_idx = 0; block_idx < n_elems / kQkK; ++block_idx) {
    quantize_block_q5_k(src + block_idx * kQkK, dst[block_idx]);
  }
}

void quantize_row_q6_k(const float* src, BlockQ6K* dst, int64_t n_elems) {
  GUFO_CHECK(n_elems % kQkK == 0);
  for (int64_t block_idx = 0; block_idx < n_elems / kQkK; ++block_idx) {
    quantize_block_q6_k(src + block_idx * kQkK, dst[block_idx]);
  }
}

}  // namespace gufo::quant
