// encode_q4_k_fast (see fast_q4_k.h). Scale packing and quant order as ggml's
// quantize_row_q4_K_ref (ggml-quants.c), which unpack_scale_min_k4 in blocks.h reverses.
// Tested by tests/unit/quantize/synth_test.cpp.
#include "quantize/fast_q4_k.h"

#include <algorithm>
#include <cstring>

#include "quant/blocks.h"
#include "quant/half.h"

namespace gufo::quantize {
namespace {

constexpr int kSubBlockElems = 32;
constexpr int kSubBlocks = quant::kQkK / kSubBlockElems;  // 8

int round_clamped(float value, int hi) {
  // value >= 0 here; value + 0.5f then truncation is the rounding the reference quantizer uses,
  // ties and all (lround would round some values just below .5 differently).
  const int rounded = static_cast<int>(value + 0.5f);  // NOLINT(bugprone-incorrect-roundings)
  return std::clamp(rounded, 0, hi);
}

void encode_block(const float* x, quant::BlockQ4K& block) {
  float scales[kSubBlocks];
  float mins[kSubBlocks];  // stored negated: x ~= scale * q - min
  float max_scale = 0;
  float max_min = 0;
  for (int sub = 0; sub < kSubBlocks; ++sub) {
    const float* sx = x + sub * kSubBlockElems;
    float lo = sx[0];
    float hi = sx[0];
    for (int i = 1; i < kSubBlockElems; ++i) {
      lo = std::min(lo, sx[i]);
      hi = std::max(hi, sx[i]);
    }
    lo = std::min(lo, 0.0f);  // as make_qkx2_quants: the min is never positive
    scales[sub] = (hi - lo) / 15.0f;
    mins[sub] = -lo;
    max_scale = std::max(max_scale, scales[sub]);
    max_min = std::max(max_min, mins[sub]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  uint8_t ls[kSubBlocks];
  uint8_t lm[kSubBlocks];
  for (int sub = 0; sub < kSubBlocks; ++sub) {
    ls[sub] = static_cast<uint8_t>(round_clamped(inv_scale * scales[sub], 63));
    lm[sub] = static_cast<uint8_t>(round_clamped(inv_min * mins[sub], 63));
  }
  std::memset(block.scales, 0, sizeof block.scales);
  for (int sub = 0; sub < kSubBlocks; ++sub) {
    if (sub < 4) {
      block.scales[sub] = ls[sub];
      block.scales[sub + 4] = lm[sub];
    } else {
      block.scales[sub + 4] = static_cast<uint8_t>((ls[sub] & 0x0F) | ((lm[sub] & 0x0F) << 4));
      block.scales[sub - 4] |= static_cast<uint8_t>((ls[sub] >> 4) << 6);
      block.scales[sub] |= static_cast<uint8_t>((lm[sub] >> 4) << 6);
    }
  }
  block.d = quant::fp32_to_fp16(max_scale / 63.0f);
  block.dmin = quant::fp32_to_fp16(max_min / 63.0f);
  const float d = quant::fp16_to_fp32(block.d);
  const float dmin = quant::fp16_to_fp32(block.dmin);

  uint8_t levels[quant::kQkK];
  for (int sub = 0; sub < kSubBlocks; ++sub) {
    const quant::ScaleMin sm = quant::unpack_scale_min_k4(sub, block.scales);
    const float sub_scale = d * sm.scale;
    const float sub_min = dmin * sm.min;
    const float inv = sub_scale > 0 ? 1.0f / sub_scale : 0.0f;
    for (int i = 0; i < kSubBlockElems; ++i) {
      const float shifted = (x[sub * kSubBlockElems + i] + sub_min) * inv;
      levels[sub * kSubBlockElems + i] = static_cast<uint8_t>(round_clamped(std::max(shifted, 0.0f), 15));
    }
  }
  // Each 64-element group: low nibbles the first 32, high nibbles the next 32.
  for (int group = 0; group < quant::kQkK / 64; ++group) {
    for (int i = 0; i < 32; ++i) {
      block.qs[group * 32 + i] = static_cast<uint8_t>(levels[group * 64 + i] | (levels[group * 64 + 32 + i] << 4));
    }
  }
}

}  // namespace

void encode_q4_k_fast(const float* x, int64_t n_elems, std::byte* out) {
  for (int64_t first = 0; first < n_elems; first += quant::kQkK) {
    quant::BlockQ4K block;
    encode_block(x + first, block);
    std::memcpy(out, &block, sizeof block);
    out += sizeof block;
  }
}

}  // namespace gufo::quantize
