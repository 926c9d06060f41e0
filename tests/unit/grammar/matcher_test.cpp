// Matcher: bytes read as UTF-8 (a code point split over bytes is allowed while some
// completion matches; invalid UTF-8 never), a refused byte leaves the state as it was,
// can_end at code point boundaries only, and a long right-recursive list stays cheap.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace gufo::grammar {
namespace {

std::shared_ptr<const Grammar> parsed(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? std::make_shared<const Grammar>(std::move(g).value()) : nullptr;
}

TEST(Matcher, ReadsUtf8ByteByByte) {
  Matcher m(parsed(R"(root ::= [a-z] [\u00e0-\u00ff] "!")"));
  EXPECT_TRUE(m.accept_byte('q'));
  EXPECT_FALSE(m.accept_byte(0xE2));  // would begin U+2000..U+2FFF: outside the class
  EXPECT_TRUE(m.accept_byte(0xC3));   // U+00C0..U+00FF: some of it is allowed
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_byte('a'));   // not a continuation byte
  EXPECT_FALSE(m.accept_byte(0x80));  // U+00C0: below the class
  EXPECT_TRUE(m.accept_byte(0xA9));   // U+00E9
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_byte('!'));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.can_continue());
}

TEST(Matcher, ALeadByteAllowsOnlyWhatItsLengthCanEncode) {
  // F0 begins U+10000 and up, E0 U+0800 and up: neither can become '.', whatever follows.
  Matcher m(parsed(R"(root ::= "no" ".")"));
  EXPECT_TRUE(m.accept("no"));
  for (uint8_t lead : {0xC2, 0xE0, 0xF0}) {
    Matcher trial = m;
    EXPECT_FALSE(trial.accept_byte(lead)) << int(lead);
  }
  Matcher wide(parsed(R"(root ::= [\u0080-\u00ff] | [\U00010000-\U0001ffff])"));
  EXPECT_TRUE(Matcher(wide).accept_byte(0xC2));
  EXPECT_FALSE(Matcher(wide).accept_byte(0xE0));  // U+0800..U+0FFF: in neither range
  EXPECT_TRUE(Matcher(wide).accept_byte(0xF0));
}

TEST(Matcher, RefusesInvalidUtf8EvenWhereAnyCodePointIsAllowed) {
  const auto g = parsed("root ::= .*");
  for (const std::string bad : {"\xC0\x80", "\xED\xA0\x80", "\xF5\x80\x80\x80", "\x80", "\xFF"}) {
    Matcher m(g);
    EXPECT_FALSE(m.accept(bad)) << testing::PrintToString(bad);
    EXPECT_TRUE(m.can_end());  // nothing was read
  }
  Matcher m(g);
  EXPECT_TRUE(m.accept("\xF0\x9F\x98\x80 ok"));
}

TEST(Matcher, ARefusedByteOrStringChangesNothing) {
  Matcher m(parsed(R"(root ::= "abc" | "abd")"));
  EXPECT_TRUE(m.accept("ab"));
  EXPECT_FALSE(m.accept("cx"));  // all or nothing
  EXPECT_FALSE(m.accept_byte('x'));
  EXPECT_TRUE(m.accept("d"));
  EXPECT_TRUE(m.can_end());
}

TEST(Matcher, ALongListStaysCheap) {
  // 200,000 items of a right-recursive list: each byte must cost the same, not grow with the
  // list (an ended rule is popped before the recursion is expanded).
  Matcher m(parsed(R"(root ::= "[" item ("," item)* "]"
item ::= [0-9]+)"));
  std::string text = "[";
  for (int i = 0; i < 200'000; ++i) text += std::to_string(i % 97) + ",";
  text.back() = ']';
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(m.accept(text));
  EXPECT_TRUE(m.can_end());
  // Not a timing test of speed: a bound a quadratic matcher would miss by orders of magnitude.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(Matcher, ALongChainOfRulesNeitherCrashesNorRunsAway) {
  // r0 ::= "a" | r1 "b", r1 ::= "a" | r2 "b", ...: 30,000 rules deep. Expanding it all would
  // take gigabytes; the matcher stops at its budget and refuses instead (NOTE(grammar)).
  std::string text = "root ::= r0\n";
  constexpr int kDepth = 30'000;
  for (int i = 0; i < kDepth; ++i) {
    text += "r" + std::to_string(i) + " ::= \"a\" | r" + std::to_string(i + 1) + " \"b\"\n";
  }
  text += "r" + std::to_string(kDepth) + " ::= \"a\"\n";
  const auto g = parsed(text);
  ASSERT_NE(g, nullptr);
  Matcher m(g);
  EXPECT_FALSE(m.accept("a"));  // refused at the budget, not a crash
  // A shallow chain still works.
  Matcher shallow(parsed("root ::= r0\nr0 ::= \"a\" | r1 \"b\"\nr1 ::= \"a\""));
  EXPECT_TRUE(shallow.accept("ab"));
  EXPECT_TRUE(shallow.can_end());
}

TEST(Matcher, AmbiguousGrammarsKeepEveryReading) {
  // "aa" can be two a-items or one aa-item; both readings go on.
  Matcher m(parsed(R"(root ::= (a | aa)+ "b" | "aab!"
a ::= "a"
aa ::= "aa")"));
  EXPECT_TRUE(m.accept("aab"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.can_continue());  // "aab!" too
  EXPECT_TRUE(m.accept("!"));
  EXPECT_TRUE(m.can_end());
}

}  // namespace
}  // namespace gufo::grammar
