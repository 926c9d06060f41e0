// Block layouts and dequantization against hand-built blocks: each test writes a block from
// the layout spec (ggml-common.h) and checks every decoded value against the format's
// formula, computed independently here. Run: ctest --preset unit -R 'Blocks|Dequantize'
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/quant.h"

namespace gufo::quant {
namespace {

TEST(Blocks, SizesMatchTheGgufTypeTable) {
  EXPECT_EQ(sizeof(BlockQ8_0), dtype_info(DType::Q8_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ4K), dtype_info(DType::Q4_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5K), dtype_info(DType::Q5_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ6K), dtype_info(DType::Q6_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8K), dtype_info(DType::Q8_K).block_bytes);
  EXPECT_EQ(kQ8_0BlockElems, static_cast<int>(dtype_info(DType::Q8_0).block_elems));
  EXPECT_EQ(kQkK, static_cast<int>(dtype_info(DType::Q4_K).block_elems));
  // Field offsets follow ggml-common.h: scales first for Q6_K, d last.
  EXPECT_EQ(offsetof(BlockQ4K, scales), 4u);
  EXPECT_EQ(offsetof(BlockQ4K, qs), 16u);
  EXPECT_EQ(offsetof(BlockQ5K, qh), 16u);
  EXPECT_EQ(offsetof(BlockQ5K, qs), 48u);
  EXPECT_EQ(offsetof(BlockQ6K, qh), 128u);
  EXPECT_EQ(offsetof(BlockQ6K, scales), 192u);
  EXPECT_EQ(offsetof(BlockQ6K, d), 208u);
}

// Sub-block scales and mins chosen to exercise every bit field of the 12-byte packing.
constexpr uint8_t kScales[8] = {1, 2, 3, 10, 17, 33, 48, 63};
constexpr uint8_t kMins[8] = {0, 5, 12, 20, 31, 40, 50, 63};
// The same, packed by hand: bytes 0-3 = scale j | (scale j+4 >> 4) << 6; bytes 4-7 =
// min j | (min j+4 >> 4) << 6; bytes 8-11 = (scale j+4 & 15) | (min j+4 & 15) << 4.
// E.g. byte 0 = 1 | (17 >> 4) << 6 = 0x41; byte 8 = (17 & 15) | (31 & 15) << 4 = 0xf1.
constexpr uint8_t kPackedScales[12] = {0x41, 0x82, 0xc3, 0xca, 0x40, 0x85, 0xcc, 0xd4, 0xf1, 0x81, 0x20, 0xff};

TEST(Blocks, UnpacksSixBitScalesAndMins) {
  for (int sub_block = 0; sub_block < 8; ++sub_block) {
    const ScaleMin sm = unpack_scale_min_k4(sub_block, kPackedScales);
    EXPECT_EQ(sm.scale, kScales[sub_block]) << sub_block;
    EXPECT_EQ(sm.min, kMins[sub_block]) << sub_block;
  }
}

template <class Block>
std::vector<float> dequantize_blocks(DType type, const std::vector<Block>& blocks) {
  const int64_t n_elems = static_cast<int64_t>(blocks.size()) * dtype_info(type).block_elems;
  std::vector<float> y(static_cast<size_t>(n_elems));
  const Status status = dequantize_row(type, blocks.data(), blocks.size() * sizeof(Block), y.data(), n_elems);
  EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message);
  return y;
}

TEST(Dequantize, Q8_0HalfScaleCoversEveryQuant) {
  // Eight blocks with d = 0.5 (fp16 0x3800) whose quants run -128..127 in row order.
  std::vector<BlockQ8_0> blocks(8);
  for (int k = 0; k < 256; ++k) {
    blocks[k / 32].d = 0x3800;
    blocks[k / 32].qs[k % 32] = static_cast<int8_t>(k - 128);
  }
  const std::vector<float> y = dequantize_blocks(DType::Q8_0, blocks);
  for (int k = 0; k < 256; ++k) EXPECT_EQ(y[k], (k - 128) * 0.5f) << k;
  EXPECT_EQ(y[0], -64.0f);
  EXPECT_EQ(y[255], 63.5f);
}

// Element e of a K-quant super-block: sub-block e / 32 (Q4_K/Q5_K); within 32-byte chunk
// c = e / 64 of qs, the low nibble holds e when e % 64 < 32, else the high nibble.
int q4_k_quant(int elem) { return (elem * 7 + 3) % 16; }
int q5_k_quant(int elem) { return (elem * 11 + 5) % 32; }

TEST(Dequantize, Q4KFollowsScaleMinFormula) {
  std::vector<BlockQ4K> blocks(1);
  BlockQ4K& block = blocks[0];
  block.d = 0x3c00;     // 1.0
  block.dmin = 0x3800;  // 0.5
  std::memcpy(block.scales, kPackedScales, sizeof kPackedScales);
  for (int chunk = 0; chunk < 4; ++chunk) {
    for (int lane = 0; lane < 32; ++lane) {
      block.qs[32 * chunk + lane] =
          static_cast<uint8_t>(q4_k_quant(64 * chunk + lane) | (q4_k_quant(64 * chunk + 32 + lane) << 4));
    }
  }
  const std::vector<float> y = dequantize_blocks(DType::Q4_K, blocks);
  for (int e = 0; e < 256; ++e) {
    const float expected = 1.0f * kScales[e / 32] * q4_k_quant(e) - 0.5f * kMins[e / 32];
    EXPECT_EQ(y[e], expected) << e;
  }
  // Spot values: element 0 is q 3 in sub-block 0: 1*1*3 - 0.5*0; element 255 is
  // q (255*7+3)%16 = 12 in sub-block 7: 63*12 - 0.5*63.
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[255], 724.5f);
}

TEST(Dequantize, Q5KAddsHighBitFromQh) {
  std::vector<BlockQ5K> blocks(1);
  BlockQ5K& block = blocks[0];
  block.d = 0x3400;     // 0.25
  block.dmin = 0x3c00;  // 1.0
  std::memcpy(block.scales, kPackedScales, sizeof kPackedScales);
  std::memset(block.qh, 0, sizeof block.qh);
  for (int chunk = 0; chunk < 4; ++chunk) {
    for (int lane = 0; lane < 32; ++lane) {
      const int low_elem = 64 * chunk + lane;
      const int high_elem = low_elem + 32;
      block.qs[32 * chunk + lane] =
          static_cast<uint8_t>((q5_k_quant(low_elem) & 15) | ((q5_k_quant(high_elem) & 15) << 4));
    }
  }
  // Bit j of qh[lane] is bit 4 of element 32 * j + lane.
  for (int e = 0; e < 256; ++e) {
    block.qh[e % 32] = static_cast<uint8_t>(block.qh[e % 32] | ((q5_k_quant(e) >> 4) << (e / 32)));
  }
  const std::vector<float> y = dequantize_blocks(DType::Q5_K, blocks);
  for (int e = 0; e < 256; ++e) {
    const float expected = 0.25f * kScales[e / 32] * q5_k_quant(e) - 1.0f * kMins[e / 32];
    EXPECT_EQ(y[e], expected) << e;
  }
  EXPECT_EQ(y[0], 1.25f);     // 0.25 * 1 * 5 - 1 * 0
  EXPECT_EQ(y[200], 298.0f);  // 0.25 * 48 * 29 - 1 * 50; (200*11+5)%32 = 29, sub-block 6
}

int q6_k_quant(int elem) { return (elem * 5 + 1) % 64; }
constexpr int8_t kQ6Scales[16] = {-128, -64, -1, 0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 127, -7};

TEST(Dequantize, Q6KSignedScalesAndOffset32) {
  std::vector<BlockQ6K> blocks(1);
  BlockQ6K& block = blocks[0];
  block.d = 0x3400;  // 0.25
  std::memcpy(block.scales, kQ6Scales, sizeof kQ6Scales);
  std::memset(block.ql, 0, sizeof block.ql);
  std::memset(block.qh, 0, sizeof block.qh);
  // e = 128 h + 32 k + lane: low 4 bits in ql[64 h + 32 (k % 2) + lane] (low nibble for
  // k < 2, high nibble for k >= 2); bits 4-5 in bits 2k..2k+1 of qh[32 h + lane].
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128;
    const int k = (e % 128) / 32;
    const int lane = e % 32;
    const int q = q6_k_quant(e);
    uint8_t& low = block.ql[64 * half + 32 * (k % 2) + lane];
    low = static_cast<uint8_t>(low | ((q & 15) << (k < 2 ? 0 : 4)));
    uint8_t& high = block.qh[32 * half + lane];
    high = static_cast<uint8_t>(high | ((q >> 4) << (2 * k)));
  }
  const std::vector<float> y = dequantize_blocks(DType::Q6_K, blocks);
  for (int e = 0; e < 256; ++e) {
    const float expected = 0.25f * kQ6Scales[e / 16] * (q6_k_quant(e) - 32);
    EXPECT_EQ(y[e], expected) << e;
  }
  EXPECT_EQ(y[0], 992.0f);    // 0.25 * -128 * (1 - 32)
  EXPECT_EQ(y[255], -49.0f);  // 0.25 * -7 * (60 - 32); (255*5+1)%64 = 60
}

TEST(Dequantize, PlainFormats) {
  const uint16_t halves[4] = {0x3c00, 0xc000, 0x0001, 0x7bff};
  float y[4];
  ASSERT_TRUE(dequantize_row(DType::F16, halves, sizeof halves, y, 4).ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 5.9604644775390625e-08f);
  EXPECT_EQ(y[3], 65504.0f);

  const uint16_t bf16s[2] = {0x3f80, 0xc2f7};  // 1.0, -123.5
  ASSERT_TRUE(dequantize_row(DType::BF16, bf16s, sizeof bf16s, y, 2).ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -123.5f);

  const float floats[3] = {1.5f, -0.0f, 3e38f};
  ASSERT_TRUE(dequantize_row(DType::F32, floats, sizeof floats, y, 3).ok());
  EXPECT_EQ(std::memcmp(y, floats, sizeof floats), 0);
}

}  // namespace
}  // namespace gufo::quant
