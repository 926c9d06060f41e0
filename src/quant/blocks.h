// Quantized block layouts of the GGUF ecosystem, byte for byte as ggml-common.h defines them
// (QK_K = 256 super-blocks, K_SCALE_SIZE = 12; fp16 fields stored as raw uint16_t bits).
// Plain structs and constexpr helpers, shared by host and device code. Sizes are checked here
// at compile time and against core/dtype's table in tests/unit/quant/dequantize_test.cpp.
#pragma once

#include <cstdint>

#include "quant/host_device.h"

namespace gufo::quant {

// NOTE(blocks): element counts per block, from ggml-common.h (QK8_0 = 32, QK_K = 256).
inline constexpr int kQ8_0BlockElems = 32;
inline constexpr int kQkK = 256;
// NOTE(blocks): K_SCALE_SIZE: eight 6-bit scales and eight 6-bit mins packed into 12 bytes.
inline constexpr int kKScaleBytes = 12;

// Q8_0: y[i] = d * qs[i]. 32 elements, 8.5 bits per weight.
struct BlockQ8_0 {
  uint16_t d;                  // fp16 scale
  int8_t qs[kQ8_0BlockElems];  // quants
};

// Q4_K: 8 sub-blocks of 32; y = d * sc[j] * q - dmin * m[j], q in [0, 15], sc/m 6-bit.
// qs holds 64 elements per 32 bytes: low nibbles are sub-block 2c, high nibbles 2c + 1.
struct BlockQ4K {
  uint16_t d;                    // fp16 super-block scale for the 6-bit scales
  uint16_t dmin;                 // fp16 super-block scale for the 6-bit mins
  uint8_t scales[kKScaleBytes];  // packed 6-bit scales and mins (see unpack_scale_min_k4)
  uint8_t qs[kQkK / 2];          // 4-bit quants
};

// Q5_K: as Q4_K with a fifth quant bit; q in [0, 31]. Bit j of qh[i] is the high bit of
// element 32 * j + i (j is the sub-block).
struct BlockQ5K {
  uint16_t d;                    // fp16 super-block scale for the 6-bit scales
  uint16_t dmin;                 // fp16 super-block scale for the 6-bit mins
  uint8_t scales[kKScaleBytes];  // packed 6-bit scales and mins
  uint8_t qh[kQkK / 8];          // quants, high bit
  uint8_t qs[kQkK / 2];          // quants, low 4 bits
};

// Q6_K: 16 sub-blocks of 16; y = d * scales[e / 16] * (q - 32), q in [0, 63].
struct BlockQ6K {
  uint8_t ql[kQkK / 2];      // quants, low 4 bits
  uint8_t qh[kQkK / 4];      // quants, high 2 bits
  int8_t scales[kQkK / 16];  // 8-bit signed sub-block scales
  uint16_t d;                // fp16 super-block scale
};

// Q8_K: the activation format ggml pairs with K-quant weights in its CPU dot products.
// Layout only (no quantizer here yet); kept so CPU dot-product code shares one definition.
struct BlockQ8K {
  float d;                   // fp32 scale
  int8_t qs[kQkK];           // quants
  int16_t bsums[kQkK / 16];  // sums of each group of 16 quants
};

// NOTE(blocks): sizes are those of ggml-common.h's static_asserts and of core/dtype.cpp's
// table: 2 + 32; 2*2 + 12 + 128; 2*2 + 12 + 32 + 128; 128 + 64 + 16 + 2; 4 + 256 + 32.
static_assert(sizeof(BlockQ8_0) == 34, "wrong q8_0 block size/padding");
static_assert(sizeof(BlockQ4K) == 144, "wrong q4_K block size/padding");
static_assert(sizeof(BlockQ5K) == 176, "wrong q5_K block size/padding");
static_assert(sizeof(BlockQ6K) == 210, "wrong q6_K block size/padding");
static_assert(sizeof(BlockQ8K) == 292, "wrong q8_K block size/padding");

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block (get_scale_min_k4).
// Bytes 0-3: scales 0-3 in the low 6 bits; bytes 4-7: mins 0-3 in the low 6 bits;
// bytes 8-11: low nibble = low 4 bits of scale j, high nibble = low 4 bits of min j (j >= 4),
// whose top 2 bits sit in bits 6-7 of bytes j-4 (scale) and j (min).
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};

GUFO_HOST_DEVICE constexpr ScaleMin unpack_scale_min_k4(int sub_block, const uint8_t* scales) {
  if (sub_block < 4) {
    return {static_cast<uint8_t>(scales[sub_block] & 63), static_cast<uint8_t>(scales[sub_block + 4] & 63)};
  }
  return {static_cast<uint8_t>((scales[sub_block + 4] & 0x0f) | ((scales[sub_block - 4] >> 6) << 4)),
          static_cast<uint8_t>((scales[sub_block + 4] >> 4) | ((scales[sub_block] >> 6) << 4))};
}

}  // namespace gufo::quant
