// Tests for gguf/value.h: type ids and names, factories, and exact equality.
#include "gguf/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gufo::gguf {
namespace {

TEST(GgufValue, IdsNamesAndSizesFollowTheSpec) {
  EXPECT_EQ(value_type_name(ValueType::UInt8), "uint8");
  EXPECT_EQ(value_type_name(ValueType::Float32), "float32");
  EXPECT_EQ(value_type_name(ValueType::Array), "array");
  EXPECT_EQ(value_type_name(ValueType::Float64), "float64");
  EXPECT_EQ(static_cast<uint32_t>(ValueType::String), 8u);
  EXPECT_EQ(static_cast<uint32_t>(ValueType::UInt64), 10u);
  EXPECT_EQ(value_type_from_id(12), ValueType::Float64);
  EXPECT_FALSE(value_type_from_id(13).has_value());
  EXPECT_FALSE(value_type_from_id(0xFFFFFFFFu).has_value());
  EXPECT_EQ(value_type_fixed_bytes(ValueType::Bool), 1u);
  EXPECT_EQ(value_type_fixed_bytes(ValueType::Int64), 8u);
  EXPECT_EQ(value_type_fixed_bytes(ValueType::String), 0u);
}

TEST(GgufValue, FactoriesPickTheNamedType) {
  EXPECT_EQ(Value::u8(1).type(), ValueType::UInt8);
  EXPECT_EQ(Value::i8(1).type(), ValueType::Int8);
  EXPECT_EQ(Value::u16(1).type(), ValueType::UInt16);
  EXPECT_EQ(Value::i16(1).type(), ValueType::Int16);
  EXPECT_EQ(Value::u32(1).type(), ValueType::UInt32);
  EXPECT_EQ(Value::i32(1).type(), ValueType::Int32);
  EXPECT_EQ(Value::f32(1).type(), ValueType::Float32);
  EXPECT_EQ(Value::boolean(true).type(), ValueType::Bool);
  EXPECT_EQ(Value::string("x").type(), ValueType::String);
  EXPECT_EQ(Value::array(Array()).type(), ValueType::Array);
  EXPECT_EQ(Value::u64(1).type(), ValueType::UInt64);
  EXPECT_EQ(Value::i64(1).type(), ValueType::Int64);
  EXPECT_EQ(Value::f64(1).type(), ValueType::Float64);
  EXPECT_EQ(value_type_of<std::string>(), ValueType::String);
  EXPECT_EQ(value_type_of<Array>(), ValueType::Array);
  EXPECT_EQ(value_type_of<bool>(), ValueType::Bool);
  EXPECT_EQ(value_type_of<double>(), ValueType::Float64);
}

TEST(GgufValue, ArraysKnowTheirElementType) {
  const Array strings(std::vector<std::string>{"a", "b"});
  EXPECT_EQ(strings.element_type(), ValueType::String);
  EXPECT_EQ(strings.size(), 2u);
  ASSERT_NE(strings.get_if<std::string>(), nullptr);
  EXPECT_EQ(strings.get_if<int32_t>(), nullptr);
  EXPECT_EQ(Array(std::vector<bool>{true}).element_type(), ValueType::Bool);
  EXPECT_EQ(Array(std::vector<uint8_t>{1}).element_type(), ValueType::UInt8);
  EXPECT_EQ(Array(std::vector<Array>{}).element_type(), ValueType::Array);
  EXPECT_EQ(Value::array(strings).type_description(), "array of string");
  EXPECT_EQ(Value::u32(0).type_description(), "uint32");
}

TEST(GgufValue, EqualityIsExactForFloats) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Value::f32(nan), Value::f32(nan));
  EXPECT_NE(Value::f32(0.0f), Value::f32(-0.0f));
  EXPECT_NE(Value::u32(1), Value::i32(1));
  EXPECT_EQ(Value::array(Array(std::vector<double>{std::nan("")})),
            Value::array(Array(std::vector<double>{std::nan("")})));
  const Array nested(std::vector<Array>{Array(std::vector<int8_t>{1}), Array()});
  EXPECT_EQ(Value::array(nested), Value::array(nested));
  EXPECT_NE(Value::array(nested), Value::array(Array(std::vector<Array>{Array(std::vector<int8_t>{2}), Array()})));
}

}  // namespace
}  // namespace gufo::gguf
