// Unit tests for src/core: Result/Status propagation and the GGUF type table.
// Run: ctest --preset unit -R core_test
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/fnv1a.h"
#include "core/result.h"

namespace gufo {
namespace {

Result<int> parse_positive(int value) {
  if (value <= 0) return Error{"value must be positive, got " + std::to_string(value)};
  return value;
}

Result<int> doubled(int value) {
  GUFO_ASSIGN_OR_RETURN(int checked, parse_positive(value));
  return checked * 2;
}

Status check_both(int a, int b) {
  GUFO_RETURN_IF_ERROR(parse_positive(a));
  GUFO_RETURN_IF_ERROR(parse_positive(b));
  return ok_status();
}

TEST(Result, CarriesValueOrError) {
  Result<int> good = doubled(21);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);

  Result<int> bad = doubled(-3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "value must be positive, got -3");
}

TEST(Result, StatusPropagatesFirstError) {
  EXPECT_TRUE(check_both(1, 2).ok());
  Status status = check_both(1, 0);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "value must be positive, got 0");
}

TEST(DType, TableMatchesGgmlBlockSizes) {
  // NOTE(dtype): expected sizes recomputed here from the field lists of ggml-common.h's
  // block structs, independently of the table in dtype.cpp.
  constexpr uint32_t qk_k = 256;
  constexpr uint32_t f16_bytes = 2;
  EXPECT_EQ(dtype_info(DType::Q8_0).block_bytes, f16_bytes + 32);
  EXPECT_EQ(dtype_info(DType::Q4_K).block_bytes, 2 * f16_bytes + 12 + qk_k / 2);
  EXPECT_EQ(dtype_info(DType::Q5_K).block_bytes, 2 * f16_bytes + 12 + qk_k / 8 + qk_k / 2);
  EXPECT_EQ(dtype_info(DType::Q6_K).block_bytes, qk_k / 2 + qk_k / 4 + qk_k / 16 + f16_bytes);
  EXPECT_EQ(dtype_info(DType::Q2_K).block_bytes, qk_k / 16 + qk_k / 4 + 2 * f16_bytes);
  EXPECT_EQ(dtype_info(DType::Q3_K).block_bytes, qk_k / 8 + qk_k / 4 + 12 + f16_bytes);
  EXPECT_EQ(dtype_info(DType::Q8_K).block_bytes, 4 + qk_k + qk_k / 16 * 2);
  EXPECT_EQ(dtype_info(DType::BF16).block_bytes, 2u);
  EXPECT_EQ(dtype_info(DType::Q4_K).block_elems, qk_k);
  EXPECT_EQ(dtype_info(DType::Q8_0).block_elems, 32u);
}

TEST(DType, RetiredAndUnknownIdsAreRejected) {
  for (uint32_t retired : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u, 0xFFFFFFFFu}) {
    EXPECT_FALSE(dtype_info(retired).has_value()) << retired;
  }
  EXPECT_EQ(dtype_info(12u)->name, "Q4_K");
}

TEST(DType, NamesRoundTripCaseInsensitively) {
  EXPECT_EQ(dtype_from_name("q4_k"), DType::Q4_K);
  EXPECT_EQ(dtype_from_name("BF16"), DType::BF16);
  EXPECT_FALSE(dtype_from_name("q4_k_m").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
  EXPECT_EQ(dtype_row_bytes(dtype_info(DType::Q8_0), 64), 68u);
}

}  // namespace
}  // namespace gufo

// The published test vectors (draft-eastlake-fnv), and the three entry points agreeing.
TEST(Fnv1a, MatchesTheReferenceVectorsOverTextBytesAndWords) {
  EXPECT_EQ(gufo::fnv1a_64(std::string_view("")), 0xcbf29ce484222325ull);
  EXPECT_EQ(gufo::fnv1a_64(std::string_view("a")), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(gufo::fnv1a_64(std::string_view("foobar")), 0x85944171f73967e8ull);
  const std::string text = "foobar";
  EXPECT_EQ(gufo::fnv1a_64(std::as_bytes(std::span(text))), 0x85944171f73967e8ull);
  const uint64_t word = 0x0807060504030201ull;
  const std::string le = "\x01\x02\x03\x04\x05\x06\x07\x08";
  EXPECT_EQ(gufo::fnv1a_64_word(word, gufo::kFnv1a64Offset), gufo::fnv1a_64(std::string_view(le)));
}
