// The checked row API (quant.h): which types it takes, and the error messages for bad
// arguments and unrepresentable input. Run: ctest --preset unit -R QuantApi
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "quant/quant.h"

namespace gufo::quant {
namespace {

// Expects an error whose message contains every fragment.
void expect_error(const Status& status, std::initializer_list<const char*> fragments) {
  ASSERT_FALSE(status.ok());
  for (const char* fragment : fragments) {
    EXPECT_NE(status.error().message.find(fragment), std::string::npos)
        << "message \"" << status.error().message << "\" lacks \"" << fragment << "\"";
  }
}

TEST(QuantApi, SupportedTypes) {
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    EXPECT_TRUE(can_quantize(type)) << dtype_name(type);
    EXPECT_TRUE(can_dequantize(type)) << dtype_name(type);
  }
  for (DType type : {DType::Q4_0, DType::Q2_K, DType::Q3_K, DType::Q8_K, DType::IQ2_XXS, DType::I32, DType::MXFP4}) {
    EXPECT_FALSE(can_quantize(type)) << dtype_name(type);
    EXPECT_FALSE(can_dequantize(type)) << dtype_name(type);
  }
  EXPECT_FALSE(can_dequantize(static_cast<DType>(4)));  // a retired GGUF id
}

TEST(QuantApi, UnsupportedTypeIsNamed) {
  std::vector<uint8_t> buffer(1024);
  std::vector<float> values(256);
  expect_error(dequantize_row(DType::Q2_K, buffer.data(), buffer.size(), values.data(), 256),
               {"dequantize_row", "Q2_K", "not supported"});
  expect_error(quantize_row(DType::IQ2_XXS, values.data(), 256, buffer.data(), buffer.size()),
               {"quantize_row", "IQ2_XXS", "not supported"});
  expect_error(dequantize_row(static_cast<DType>(4), buffer.data(), buffer.size(), values.data(), 256),
               {"unknown type id 4"});
  expect_error(quantize_row(static_cast<DType>(1000), values.data(), 256, buffer.data(), buffer.size()),
               {"unknown type id 1000"});
}

TEST(QuantApi, LengthMustBeAWholeNumberOfBlocks) {
  std::vector<uint8_t> buffer(4096);
  std::vector<float> values(512);
  expect_error(quantize_row(DType::Q4_K, values.data(), 300, buffer.data(), buffer.size()),
               {"Q4_K", "multiple of 256", "300"});
  expect_error(dequantize_row(DType::Q8_0, buffer.data(), buffer.size(), values.data(), 33),
               {"Q8_0", "multiple of 32", "33"});
  expect_error(dequantize_row(DType::F16, buffer.data(), buffer.size(), values.data(), -1), {"F16", "-1"});
}

TEST(QuantApi, ShortBufferSaysWhatItNeeds) {
  std::vector<uint8_t> buffer(287);
  std::vector<float> values(512);
  // Two Q4_K blocks are 2 * 144 = 288 bytes.
  expect_error(quantize_row(DType::Q4_K, values.data(), 512, buffer.data(), buffer.size()),
               {"Q4_K", "512 elements", "needs 288 bytes", "buffer has 287"});
  expect_error(dequantize_row(DType::Q6_K, buffer.data(), 209, values.data(), 256),
               {"Q6_K", "needs 210 bytes", "buffer has 209"});
  expect_error(dequantize_row(DType::F32, buffer.data(), 7, values.data(), 2), {"F32", "needs 8 bytes", "has 7"});
}

TEST(QuantApi, NonFiniteInputIsRefusedForBlockFormats) {
  std::vector<float> values(256, 1.0f);
  std::vector<uint8_t> buffer(1024);
  values[5] = NAN;
  expect_error(quantize_row(DType::Q8_0, values.data(), 256, buffer.data(), buffer.size()),
               {"Q8_0", "element 5", "NaN"});
  values[5] = 1.0f;
  values[200] = -INFINITY;
  expect_error(quantize_row(DType::Q6_K, values.data(), 256, buffer.data(), buffer.size()),
               {"Q6_K", "element 200", "infinite"});
  // Plain formats store them as IEEE says.
  EXPECT_TRUE(quantize_row(DType::F16, values.data(), 256, buffer.data(), buffer.size()).ok());
  EXPECT_TRUE(quantize_row(DType::BF16, values.data(), 256, buffer.data(), buffer.size()).ok());
}

TEST(QuantApi, MisalignedBlocksAreRefused) {
  alignas(8) uint8_t buffer[64] = {};
  float values[32] = {};
  expect_error(dequantize_row(DType::Q8_0, buffer + 1, 34, values, 32), {"Q8_0", "alignment"});
  expect_error(quantize_row(DType::F16, values, 2, buffer + 1, 4), {"F16", "alignment"});
  // F32 is copied byte-wise and may sit anywhere.
  EXPECT_TRUE(dequantize_row(DType::F32, buffer + 1, 8, values, 2).ok());
}

TEST(QuantApi, EmptyRowsAreFine) {
  EXPECT_TRUE(quantize_row(DType::Q4_K, nullptr, 0, nullptr, 0).ok());
  EXPECT_TRUE(dequantize_row(DType::Q8_0, nullptr, 0, nullptr, 0).ok());
}

}  // namespace
}  // namespace gufo::quant
