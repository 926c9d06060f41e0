// The qwen2 / llama-bpe split patterns on hand-checked inputs (the parity test covers the
// rest against the real regex engine). Run: ctest --preset unit -R tokenizer_test
#include <gtest/gtest.h>

#include "tokenizer/pretokenize.h"

namespace gufo::tokenizer {
namespace {

using Pieces = std::vector<std::string_view>;

TEST(PreTokenize, Qwen2Splits) {
  const auto split = [](std::string_view text) { return pre_tokenize(PreTokenizer::Qwen2, text); };
  EXPECT_EQ(split("Hello, world!"), (Pieces{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("I'M they'RE"), (Pieces{"I", "'M", " they", "'RE"}));
  EXPECT_EQ(split("12345"), (Pieces{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(split("a  b"), (Pieces{"a", " ", " b"}));
  EXPECT_EQ(split("a \n\n b"), (Pieces{"a", " \n\n", " b"}));
  EXPECT_EQ(split("x  "), (Pieces{"x", "  "}));
  EXPECT_EQ(split("(a)"), (Pieces{"(a", ")"}));
  EXPECT_EQ(split(" ...\n\nx"), (Pieces{" ...\n\n", "x"}));
  EXPECT_EQ(split("\xE4\xBD\xA0\xE5\xA5\xBD"), (Pieces{"\xE4\xBD\xA0\xE5\xA5\xBD"}));  // CJK letters
  EXPECT_EQ(split(""), (Pieces{}));
}

TEST(PreTokenize, Llama3GroupsDigitsByThree) {
  EXPECT_EQ(pre_tokenize(PreTokenizer::Llama3, "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(pre_tokenize(PreTokenizer::Llama3, "v12"), (Pieces{"v", "12"}));
}

TEST(PreTokenize, PiecesCoverInvalidUtf8) {
  const std::string text = "a\xFF\xC3 b\x80";
  std::string joined;
  for (std::string_view piece : pre_tokenize(PreTokenizer::Qwen2, text)) joined += piece;
  EXPECT_EQ(joined, text);
}

TEST(PreTokenize, Names) {
  EXPECT_EQ(pre_tokenizer_from_name("qwen2").value(), PreTokenizer::Qwen2);
  EXPECT_EQ(pre_tokenizer_from_name("llama-bpe").value(), PreTokenizer::Llama3);
  EXPECT_FALSE(pre_tokenizer_from_name("gpt2").ok());
}

}  // namespace
}  // namespace gufo::tokenizer
