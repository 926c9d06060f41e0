// Tests for gguf/value_text.h: one-line abbreviated values, as `gufo inspect` prints them.
#include "gguf/value_text.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace gufo::gguf {
namespace {

TEST(GgufValueText, Scalars) {
  EXPECT_EQ(value_to_text(Value::u8(255)), "255");
  EXPECT_EQ(value_to_text(Value::i8(-128)), "-128");
  EXPECT_EQ(value_to_text(Value::u64(std::numeric_limits<uint64_t>::max())), "18446744073709551615");
  EXPECT_EQ(value_to_text(Value::boolean(false)), "false");
  EXPECT_EQ(value_to_text(Value::f32(0.1f)), "0.1");
  EXPECT_EQ(value_to_text(Value::f32(1e-6f)), "1e-06");
  EXPECT_EQ(value_to_text(Value::f64(std::numeric_limits<double>::infinity())), "inf");
  EXPECT_EQ(value_to_text(Value::f64(std::numeric_limits<double>::quiet_NaN())), "nan");
}

TEST(GgufValueText, LongArraysAreAbbreviatedWithTheirLength) {
  std::vector<std::string> tokens(151936, "t");
  tokens[0] = "!";
  tokens[1] = "\"";
  tokens[2] = "#";
  TextLimits limits;
  limits.max_array_items = 3;
  EXPECT_EQ(value_to_text(Value::array(Array(tokens)), limits), "[151936 x string] [\"!\", \"\\\"\", \"#\", ...]");
  EXPECT_EQ(value_to_text(Value::array(Array(std::vector<int32_t>{1, 2}))), "[2 x int32] [1, 2]");
  EXPECT_EQ(value_to_text(Value::array(Array(std::vector<bool>{true}))), "[1 x bool] [true]");
  EXPECT_EQ(value_to_text(Value::array(Array(std::vector<float>{}))), "[0 x float32] []");
}

TEST(GgufValueText, NestedArraysShareOneBudget) {
  const Array inner(std::vector<uint8_t>(100, 7));
  const Array outer(std::vector<Array>(100, inner));
  const std::string text = value_to_text(Value::array(outer));
  EXPECT_EQ(text.rfind("[100 x array] [[100 x uint8] [7, 7", 0), 0u) << text;
  EXPECT_LT(text.size(), 400u) << text;
}

TEST(GgufValueText, LongStringsAreCutWithANote) {
  const std::string long_text(1000, 'a');
  const std::string text = value_to_text(Value::string(long_text));
  EXPECT_NE(text.find("(truncated, 1000 bytes)"), std::string::npos);
  EXPECT_LT(text.size(), 250u);
  EXPECT_EQ(value_to_text(Value::string("a\nb")), "\"a\\nb\"");
}

}  // namespace
}  // namespace gufo::gguf
