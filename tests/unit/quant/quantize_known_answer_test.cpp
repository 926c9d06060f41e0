// Known-answer quantization: inputs whose exact output bytes follow by hand from ggml's
// reference algorithms (values worked out in the comments). Run: ctest --preset unit -R KnownAnswer
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/quant.h"

namespace gufo::quant {
namespace {

template <class Block>
Block quantize_one(DType type, const std::vector<float>& x) {
  Block block;
  std::memset(&block, 0xa5, sizeof block);  // garbage: every byte must be written
  const Status status = quantize_row(type, x.data(), static_cast<int64_t>(x.size()), &block, sizeof block);
  EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message);
  return block;
}

template <class Block>
std::vector<float> dequantize_one(DType type, const Block& block) {
  std::vector<float> y(dtype_info(type).block_elems);
  EXPECT_TRUE(dequantize_row(type, &block, sizeof block, y.data(), static_cast<int64_t>(y.size())).ok());
  return y;
}

template <class Block>
bool all_bytes_zero(const Block& block) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&block);
  for (size_t i = 0; i < sizeof block; ++i) {
    if (bytes[i] != 0) return false;
  }
  return true;
}

TEST(KnownAnswerQ8_0, Ramp0To31) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i);
  const auto block = quantize_one<BlockQ8_0>(DType::Q8_0, x);
  // d = 31/127 = 0.244094... = 1.95276 * 2^-3: exponent field 12, mantissa round(0.95276 *
  // 1024) = 976 -> 0x3000 + 0x3d0.
  EXPECT_EQ(block.d, 0x33d0);
  // q = round(i * 127 / 31); i * 127 % 31 is never 15.5, so there are no ties.
  for (int i = 0; i < 32; ++i) EXPECT_EQ(block.qs[i], (127 * i + 15) / 31) << i;
}

TEST(KnownAnswerQ8_0, ConstantBlocks) {
  // 0.75 / 127 = 1.51181 * 2^-8: exponent field 7, mantissa round(0.51181 * 1024) = 524.
  const auto positive = quantize_one<BlockQ8_0>(DType::Q8_0, std::vector<float>(32, 0.75f));
  EXPECT_EQ(positive.d, 0x1e0c);
  for (int8_t q : positive.qs) EXPECT_EQ(q, 127);
  // 2 / 127 = 1.00787 * 2^-6: exponent field 9, mantissa round(0.00787 * 1024) = 8.
  const auto negative = quantize_one<BlockQ8_0>(DType::Q8_0, std::vector<float>(32, -2.0f));
  EXPECT_EQ(negative.d, 0x2408);
  for (int8_t q : negative.qs) EXPECT_EQ(q, -127);
}

TEST(KnownAnswerQ8_0, OneHugeOutlierFlushesTheRest) {
  std::vector<float> x(32, 1.0f);
  x[7] = 1000.0f;
  const auto block = quantize_one<BlockQ8_0>(DType::Q8_0, x);
  // 1000 / 127 = 1.9685 * 2^2: exponent field 17, mantissa round(0.9685 * 1024) = 992.
  EXPECT_EQ(block.d, 0x47e0);                                                  // 7.875
  for (int i = 0; i < 32; ++i) EXPECT_EQ(block.qs[i], i == 7 ? 127 : 0) << i;  // 1/7.87 -> 0
  const std::vector<float> y = dequantize_one(DType::Q8_0, block);
  EXPECT_EQ(y[7], 1000.125f);
  EXPECT_EQ(y[0], 0.0f);
}

TEST(KnownAnswerQ8_0, HalvesRoundAwayFromZero) {
  // max |x| = 127 gives d = 1 exactly; ggml rounds with roundf, so .5 goes away from zero
  // (nearest-even would give 2, -2, 0, 0).
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.5f;
  x[4] = -0.5f;
  const auto block = quantize_one<BlockQ8_0>(DType::Q8_0, x);
  EXPECT_EQ(block.d, 0x3c00);
  EXPECT_EQ(block.qs[1], 3);
  EXPECT_EQ(block.qs[2], -3);
  EXPECT_EQ(block.qs[3], 1);
  EXPECT_EQ(block.qs[4], -1);
}

TEST(KnownAnswerQ8_0, MultiplesOfAnFp16ScaleAreExact) {
  // x = k * 2^-7 with k in [-127, 127] and some |k| = 127: d is exactly 2^-7 (fp16 0x2000)
  // and every value is reconstructed exactly.
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>((i * 37) % 255 - 127) * 0.0078125f;
  x[5] = -127 * 0.0078125f;
  x[40] = 127 * 0.0078125f;
  std::vector<BlockQ8_0> blocks(2);
  ASSERT_TRUE(quantize_row(DType::Q8_0, x.data(), 64, blocks.data(), sizeof(BlockQ8_0) * 2).ok());
  EXPECT_EQ(blocks[0].d, 0x2000);
  EXPECT_EQ(blocks[1].d, 0x2000);
  std::vector<float> y(64);
  ASSERT_TRUE(dequantize_row(DType::Q8_0, blocks.data(), sizeof(BlockQ8_0) * 2, y.data(), 64).ok());
  EXPECT_EQ(y, x);
}

TEST(KnownAnswer, ZerosGiveAllZeroBytes) {
  const std::vector<float> zeros(256, 0.0f);
  EXPECT_TRUE(all_bytes_zero(quantize_one<BlockQ8_0>(DType::Q8_0, std::vector<float>(32, 0.0f))));
  EXPECT_TRUE(all_bytes_zero(quantize_one<BlockQ4K>(DType::Q4_K, zeros)));
  EXPECT_TRUE(all_bytes_zero(quantize_one<BlockQ5K>(DType::Q5_K, zeros)));
  EXPECT_TRUE(all_bytes_zero(quantize_one<BlockQ6K>(DType::Q6_K, zeros)));
}

// A constant negative super-block: every sub-block is flat, so the search returns scale 0
// and min 0.5; scales quantize to code 0 (d = 0) and mins to code 63 against
// dmin = 0.5 / 63 = 1.01587 * 2^-7 (exponent field 8, mantissa round(0.01587 * 1024) = 16).
TEST(KnownAnswerQ4K, ConstantNegativeUsesOnlyTheMin) {
  const auto block = quantize_one<BlockQ4K>(DType::Q4_K, std::vector<float>(256, -0.5f));
  EXPECT_EQ(block.d, 0x0000);
  EXPECT_EQ(block.dmin, 0x2010);
  // Packed: scales 0-3 = 0 (top bits of scales 4-7 are 0); mins 0-3 = 63 | 3 << 6;
  // bytes 8-11 = scale 0 | (63 & 15) << 4.
  const uint8_t expected_scales[12] = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xf0, 0xf0, 0xf0, 0xf0};
  EXPECT_EQ(std::memcmp(block.scales, expected_scales, 12), 0);
  for (uint8_t q : block.qs) EXPECT_EQ(q, 0);
  const std::vector<float> y = dequantize_one(DType::Q4_K, block);
  for (float v : y) EXPECT_EQ(v, -63 * fp16_to_fp32(0x2010));  // -0.49987793
}

TEST(KnownAnswerQ5K, ConstantNegativeUsesOnlyTheMin) {
  const auto block = quantize_one<BlockQ5K>(DType::Q5_K, std::vector<float>(256, -0.5f));
  EXPECT_EQ(block.d, 0x0000);
  EXPECT_EQ(block.dmin, 0x2010);
  for (uint8_t q : block.qh) EXPECT_EQ(q, 0);
  for (uint8_t q : block.qs) EXPECT_EQ(q, 0);
}

// Constant 1.0: each sub-block fits scale -1/32 with every level at -32 (stored 0); the
// super-scale is 1/4096 = 2^-12 (fp16 0x0c00) with sub-block codes -128, and
// 2^-12 * -128 * (0 - 32) reconstructs 1.0 exactly.
TEST(KnownAnswerQ6K, ConstantOneIsExact) {
  const auto block = quantize_one<BlockQ6K>(DType::Q6_K, std::vector<float>(256, 1.0f));
  EXPECT_EQ(block.d, 0x0c00);
  for (int8_t s : block.scales) EXPECT_EQ(s, -128);
  for (uint8_t q : block.ql) EXPECT_EQ(q, 0);
  for (uint8_t q : block.qh) EXPECT_EQ(q, 0);
  for (float v : dequantize_one(DType::Q6_K, block)) EXPECT_EQ(v, 1.0f);
}

TEST(KnownAnswer, PlainFormats) {
  const float x[4] = {1.0f, -65504.0f, 1e-8f, 3.14159265f};
  uint16_t halves[4];
  ASSERT_TRUE(quantize_row(DType::F16, x, 4, halves, sizeof halves).ok());
  EXPECT_EQ(halves[0], 0x3c00);
  EXPECT_EQ(halves[1], 0xfbff);
  EXPECT_EQ(halves[2], 0x0000);  // 1e-8 < 2^-25: rounds to zero
  EXPECT_EQ(halves[3], 0x4248);  // pi: 1.5708 * 2: mantissa round(0.5708 * 1024) = 584
  uint16_t bf16s[4];
  ASSERT_TRUE(quantize_row(DType::BF16, x, 4, bf16s, sizeof bf16s).ok());
  EXPECT_EQ(bf16s[0], 0x3f80);
  EXPECT_EQ(bf16s[3], 0x4049);  // pi: mantissa round(0.5708 * 128) = 73
  float copy[4];
  ASSERT_TRUE(quantize_row(DType::F32, x, 4, copy, sizeof copy).ok());
  EXPECT_EQ(std::memcmp(copy, x, sizeof x), 0);
}

}  // namespace
}  // namespace gufo::quant
