// link_grammars: compiled grammars joined under a GBNF glue keep their own rules (equal names
// in two parts do not meet); text_until_trigger_gbnf: free text that never holds the trigger,
// then the constrained rest, whatever way the trigger's characters come (overlapping starts).
#include <gtest/gtest.h>

#include "grammar/gbnf.h"
#include "grammar/link.h"
#include "grammar/trigger.h"
#include "grammar_test_util.h"

namespace gufo::grammar {
namespace {

std::shared_ptr<const Grammar> gbnf(std::string_view text) { return shared_grammar(parse_gbnf(text), text); }

TEST(LinkGrammars, PartsKeepTheirOwnRules) {
  // Both parts define `item`; each must keep its own.
  auto digits = gbnf(R"(root ::= item+
item ::= [0-9])");
  auto letters = gbnf(R"(root ::= item+
item ::= [a-z])");
  auto linked =
      shared_grammar(link_grammars(R"(root ::= "n=" num | "w=" word)", {{"num", digits}, {"word", letters}}), "linked");
  EXPECT_TRUE(matches(linked, "n=42"));
  EXPECT_TRUE(matches(linked, "w=abc"));
  EXPECT_FALSE(matches(linked, "n=4a"));
  EXPECT_FALSE(matches(linked, "w=ab1"));
  EXPECT_FALSE(matches(linked, "n="));
}

TEST(LinkGrammars, GlueErrorsAreParseErrors) {
  auto part = gbnf(R"(root ::= "x")");
  const Result<Grammar> bad = link_grammars("root ::= part missing", {{"part", part}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'missing' is used but never defined"), std::string::npos) << bad.error().message;
}

std::shared_ptr<const Grammar> until(std::string_view trigger) {
  Result<std::string> rules = text_until_trigger_gbnf("free", trigger, "rest");
  EXPECT_TRUE(rules.ok());
  return gbnf("root ::= free-0\nrest ::= \"!\"\n" + *rules);
}

TEST(TextUntilTrigger, FreeTextThenTheConstrainedRest) {
  auto g = until("<tool_call>");
  EXPECT_TRUE(matches(g, ""));
  EXPECT_TRUE(matches(g, "any text < <tool <tool_cal> at all, \xc3\xa9t\xc3\xa9"));
  EXPECT_TRUE(matches(g, "ends inside the trigger <tool_ca"));
  EXPECT_TRUE(matches(g, "text <tool_call>!"));
  EXPECT_TRUE(matches(g, "<<tool_call>!"));  // a second '<' starts the match again
  EXPECT_TRUE(matches(g, "<tool_<tool_call>!"));
  EXPECT_FALSE(matches(g, "text <tool_call>"));  // the rest must come
  EXPECT_FALSE(matches(g, "text <tool_call>?"));
  EXPECT_FALSE(matches(g, "<tool_call>! and more"));  // nothing after the rest
  Matcher m(g);
  EXPECT_TRUE(m.accept("abc <tool_call>"));
  EXPECT_FALSE(m.accept("x"));  // once triggered, only the rest
}

TEST(TextUntilTrigger, OverlappingPrefixes) {
  // "aab": after "aa" another 'a' keeps "aa" matched (KMP's failure link).
  auto g = until("aab");
  EXPECT_TRUE(matches(g, "aaaab!"));
  EXPECT_FALSE(matches(g, "aaaab"));
  EXPECT_TRUE(matches(g, "abab aa a"));
  EXPECT_FALSE(text_until_trigger_gbnf("free", "", "rest").ok());
  EXPECT_FALSE(text_until_trigger_gbnf("free", "\xc3\xa9", "rest").ok());
}

}  // namespace
}  // namespace gufo::grammar
