// parse_gbnf: every construct of llama.cpp's GBNF (literals with escapes, classes, ranges,
// negation, '.', groups, alternatives, * + ? and {m,n}, comments, rules over several lines),
// checked by what the parsed grammar matches; and the errors, each with its position: an
// undefined rule, no root, left recursion, a root with no finite match, bad syntax, limits.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/json_gbnf.h"
#include "grammar/matcher.h"
#include "grammar_test_util.h"

namespace gufo::grammar {
namespace {

std::shared_ptr<const Grammar> parsed(std::string_view text) { return shared_grammar(parse_gbnf(text), text); }

std::string error_of(std::string_view text, const GbnfLimits& limits = {}) {
  auto g = parse_gbnf(text, limits);
  return g.ok() ? "<parsed>" : g.error().message;
}

TEST(Gbnf, LiteralsClassesAndEscapes) {
  const auto g = parsed(R"(root ::= "ab" [c-e] [^x] . "\x41\u00e9\t" [\]\-\\] "\"")");
  EXPECT_TRUE(matches(g, "abdzqA\xC3\xA9\t]\""));
  EXPECT_TRUE(matches(g,
                      "abe\xE2\x82\xAC"
                      "bA\xC3\xA9\t-\""));  // '.' and [^x] take any code point
  EXPECT_TRUE(matches(g, "abcyyA\xC3\xA9\t\\\""));
  EXPECT_FALSE(matches(g, "abfzqA\xC3\xA9\t]\""));  // f is outside c-e
  EXPECT_FALSE(matches(g, "abdxqA\xC3\xA9\t]\""));  // x is refused by [^x]
  EXPECT_FALSE(matches(g, "abdzqA\xC3\xA9\t]"));    // unfinished
}

TEST(Gbnf, GroupsAlternativesAndRepetitions) {
  const auto g = parsed(R"(root ::= ("a" | "bc")+ "d"? [0-9]{2,3} x{,2} y{2} z{1,}
x ::= "x"
y ::= "y"
z ::= "z")");
  for (const char* ok : {"a12yyz", "bcabc123xxyyzzz", "ad99yyz", "a00xyyz"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"12yyz", "a1yyz", "a1234yyz", "a12xxxyyz", "a12yz", "a12yy", "add12yyz"}) {
    EXPECT_FALSE(matches(g, bad)) << bad;
  }
  const auto empty = parsed(R"(root ::= "a" ""* ""{2,3} "b")");  // repeating nothing is nothing
  EXPECT_TRUE(matches(empty, "ab"));
  const auto star = parsed(R"(root ::= "<" "ab"* ">")");  // a repetition takes the whole literal
  EXPECT_TRUE(matches(star, "<>"));
  EXPECT_TRUE(matches(star, "<ababab>"));
  EXPECT_FALSE(matches(star, "<aba>"));
}

TEST(Gbnf, RulesGoOnAfterTheirOperatorsAndInsideParentheses) {
  // As in llama.cpp, '|' at the top level must stay on the line it follows.
  const auto g = parsed(R"(# a comment line
root ::=   # after the operator
  item |
  "[" (
      item   # inside parentheses
      ("," item)*
    )? "]"
item ::= [a-z]+  # trailing comment
)");
  for (const char* ok : {"abc", "[]", "[a,bc,d]"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"[a,]", "[", "A"}) EXPECT_FALSE(matches(g, bad)) << bad;
}

TEST(Gbnf, TheJsonObjectGrammarMatchesJson) {
  const auto g = parsed(kJsonObjectGbnf);
  for (const char* ok : {R"({})", R"({"a": 1})", R"({"a": [1, -2.5e+3, true, null, "x\n\u00e9"], "b": {"c": {}}})",
                         "{\n  \"k\": \"v\"\n}", R"({"emoji": "€"})"}) {
    EXPECT_TRUE(matches(g, ok)) << ok;
  }
  for (const char* bad : {R"([])", R"({"a": 01})", R"({"a": 1,})", R"({a: 1})", R"({"a": tru})", "{\"a\": \"\x01\"}",
                          R"({"a": "\q"})", R"({"a" 1})", R"("text")"}) {
    EXPECT_FALSE(matches(g, bad)) << bad;
  }
  // Whitespace is bounded: at most one newline at a time.
  EXPECT_FALSE(matches(g, "{\n\n\"a\": 1}"));
}

TEST(Gbnf, ErrorsNameWhereAndWhat) {
  EXPECT_EQ(error_of("root ::= item"), "grammar:1:10: rule 'item' is used but never defined");
  EXPECT_EQ(error_of("start ::= \"a\""), "grammar: no 'root' rule (the grammar starts there)");
  EXPECT_EQ(error_of("root ::= root \"a\" | \"b\""),
            "grammar: rule 'root' is left-recursive (it can reach itself before reading anything)");
  EXPECT_NE(error_of("root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"b\"").find("left-recursive"), std::string::npos);
  EXPECT_EQ(error_of("root ::= \"a\" root"), "grammar: rule 'root' matches nothing finite (it only recurses)");
  EXPECT_EQ(error_of("root ::= \"a\\q\""), "grammar:1:12: unknown escape '\\q'");
  EXPECT_EQ(error_of("root ::= \"abc"), "grammar:1:14: unterminated string literal");
  EXPECT_EQ(error_of("root = \"a\""), "grammar:1:6: expected '::=' after 'root'");
  EXPECT_EQ(error_of("root ::= \"a\"**"), "grammar:1:14: '*' repeats nothing");
  EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "grammar:1:18: a repetition {m,n} with n < m");
  EXPECT_EQ(error_of("root ::= [z-a]"), "grammar:1:14: a character range whose end is below its start");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "grammar:2:1: rule 'root' is defined twice");
  EXPECT_EQ(error_of("root ::= \"a\" )"), "grammar:1:14: expected the end of the line");
  EXPECT_EQ(error_of("root ::= \"\\U00110000\""), "grammar:1:21: a code point above U+10FFFF");
  EXPECT_EQ(error_of("root ::= \"\xFF\""), "grammar:1:11: invalid UTF-8");
  EXPECT_EQ(error_of("root ::= \"\\uD800\""),
            "grammar:1:17: a surrogate (U+D800..U+DFFF) is not a code point UTF-8 can hold");
}

TEST(Gbnf, ClassesWithOverlappingAndManyRanges) {
  // Ranges in any order, overlapping or adjacent, are merged; negation is of the union.
  const auto g = parsed(R"(root ::= [^x-zb-da-cq] [e-gf-ha-a])");
  for (const char* ok : {"ea", "wh", "ra"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"aa", "da", "qa", "za", "ei", "eb"}) EXPECT_FALSE(matches(g, bad)) << bad;
  // A class costs by its ranges: ten thousand of them (every other code point from U+0100)
  // are refused under a limit of 1000.
  std::string many = "root ::= [^";
  for (int i = 0; i < 10'000; ++i) {
    char escape[8];
    std::snprintf(escape, sizeof(escape), "\\u%04x", 0x100 + 2 * i);
    many += escape;
  }
  many += "]";
  EXPECT_NE(error_of(many, {.max_symbols = 1000}).find("grows past 1000 symbols"), std::string::npos);
  const auto big = parsed(many);           // within the default limits: binary search, not a scan
  EXPECT_TRUE(matches(big, "\xC4\x81"));   // U+0101: between two of them
  EXPECT_FALSE(matches(big, "\xC4\x80"));  // U+0100: one of them
}

TEST(Gbnf, LimitsBoundWhatAGrammarMayCost) {
  EXPECT_EQ(error_of("root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')')),
            "grammar:1:138: parentheses nest deeper than 128");
  EXPECT_EQ(error_of("root ::= \"a\"{10001}"), "grammar:1:18: a repetition bound above 10000");
  EXPECT_NE(error_of("root ::= \"a\"{2000}", {.max_symbols = 1000}).find("grows past 1000 symbols"), std::string::npos);
  EXPECT_EQ(error_of("root ::= \"a\"\n  | \"b\""), "grammar:2:3: expected a rule name");
  EXPECT_NE(error_of("root ::= \"a\"", {.max_bytes = 4}).find("at most 4"), std::string::npos);
}

}  // namespace
}  // namespace gufo::grammar
