// Tests for gguf/text.h: UTF-8 checks, name rules and message-safe quoting.
#include "gguf/text.h"

#include <gtest/gtest.h>

#include <string>

namespace gufo::gguf {
namespace {

TEST(GgufText, Utf8Validation) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("general.name"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // cut sequence
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // UTF-16 surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST(GgufText, NameRules) {
  EXPECT_EQ(name_problem("general.name", 64), "");
  EXPECT_EQ(name_problem("", 64), "empty name");
  EXPECT_EQ(name_problem("abcdef", 4), "name 'abcdef' is 6 bytes long (at most 4 allowed)");
  EXPECT_EQ(name_problem("a\xff", 64), "name 'a\\xff' is not valid UTF-8");
  EXPECT_EQ(name_problem("a\nb", 64), "name 'a\\nb' contains control characters");
}

TEST(GgufText, QuotingEscapesAndCuts) {
  EXPECT_EQ(quote_name("blk.0.attn_q.weight"), "'blk.0.attn_q.weight'");
  EXPECT_EQ(quote_name("it's\x1b\x7f"), "'it\\'s\\x1b\\x7f'");
  EXPECT_EQ(quote_name("abcdef", 3), "'abc'...");
  EXPECT_EQ(quote_string("a\"b\\c\nd\x01", 100), "\"a\\\"b\\\\c\\nd\\u0001\"");
  bool truncated = false;
  // Never cut inside a character: U+00E9 is two bytes, so 2 bytes of "a" U+00E9 keep "a".
  EXPECT_EQ(quote_string("a\xc3\xa9", 2, &truncated), "\"a\"");
  EXPECT_TRUE(truncated);
  EXPECT_EQ(quote_string("a\xc3\xa9", 3, &truncated), "\"a\xc3\xa9\"");
  EXPECT_FALSE(truncated);
  EXPECT_EQ(escape_name("x\ty"), "x\\ty");
  EXPECT_EQ(utf8_prefix_bytes("\xf0\x9f\x98\x80!", 3), 0u);
  EXPECT_EQ(utf8_prefix_bytes("\xf0\x9f\x98\x80!", 4), 4u);
}

TEST(GgufText, QuotedNamesNeverBreakTheLine) {
  std::string hostile(10000, '\n');
  hostile += "\r\x00\xff";
  const std::string quoted = quote_name(hostile);
  EXPECT_EQ(quoted.find('\n'), std::string::npos);
  EXPECT_EQ(quoted.find('\r'), std::string::npos);
  EXPECT_LT(quoted.size(), 2 * kMaxQuotedNameBytes + 8);
}

}  // namespace
}  // namespace gufo::gguf
