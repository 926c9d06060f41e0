// The fast token mask (per-stack token sets, token_matcher.h) against the reference walk
// (reference_mask.h) bit for bit, at every step of random and guided generations with
// rollbacks, for the grammars constrained decoding meets (JSON, nested and recursive JSON
// Schemas, recursive GBNF, free text before a lazy trigger, strings with escapes, numbers,
// non-ASCII classes, ambiguous and bounded repetitions) over the test vocabularies and the shipped
// model's. GUFO_MASK_ORACLE_VOCAB=VOCAB.gguf adds another (Qwen3's: tools/bench).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "engine/generate.h"
#include "gguf/file.h"
#include "grammar/gbnf.h"
#include "grammar/json_gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/reference_mask.h"
#include "grammar/stack_tokens.h"
#include "grammar/token_matcher.h"
#include "grammar/trigger.h"
#include "grammar_test_util.h"
#include "mask_oracle.h"
#include "tokenizer/tokenizer.h"

namespace gufo::grammar {
namespace {

struct Case {
  std::string name;
  std::shared_ptr<const Grammar> grammar;
  std::string guide;  // an answer the walks half follow
};

std::shared_ptr<const Grammar> from_schema(const char* schema) {
  return shared_grammar(compile_json_schema(nlohmann::ordered_json::parse(schema)), schema);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"json", shared_grammar(parse_gbnf(kJsonObjectGbnf), "json"),
                 R"({"name": "Ada \"L\" \u00e9", "born": 1815, "tags": ["a", {"b": [true, null]}], "r": -2.5e-3})"});
  out.push_back(
      {"nested_schema", from_schema(R"({
    "type": "object", "additionalProperties": false, "required": ["isbn", "published", "authors", "format"],
    "properties": {
      "isbn": {"type": "string", "pattern": "^97[89]-[0-9]{10}$"},
      "published": {"type": "string", "format": "date"},
      "authors": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "object",
                  "additionalProperties": false, "required": ["name", "contact"],
                  "properties": {"name": {"type": "string", "minLength": 1},
                                 "contact": {"type": "string", "format": "email"},
                                 "id": {"type": "string", "format": "uuid"}}}},
      "pages": {"type": "integer", "minimum": 1, "maximum": 5000},
      "format": {"enum": ["hardcover", "paperback", "ebook"]}}})"),
       R"({"isbn": "978-0131103627", "published": "1988-04-01", "authors": [{"name": "Brian \"K\"", )"
       R"("contact": "bwk@example.org", "id": "123e4567-e89b-12d3-a456-426614174000"}], "format": "ebook"})"});
  out.push_back({"recursive_schema", from_schema(R"({"$ref": "#/definitions/node", "definitions": {"node": {
    "type": "object", "required": ["label"], "properties": {"label": {"type": "string", "maxLength": 12},
    "children": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}}})"),
                 R"({"label": "root", "children": [{"label": "a\nb", "children": [{"label": "c"}]}]})"});
  out.push_back({"gbnf_recursion",
                 shared_grammar(parse_gbnf(R"gbnf(
root   ::= expr
expr   ::= term ( [-+] term )*
term   ::= factor ( [*/] factor )*
factor ::= [0-9]+ ( "." [0-9]+ )? | "(" ws expr ws ")" | "-" factor
ws     ::= " "?)gbnf"),
                                "gbnf_recursion"),
                 "(1+2)*-(3.5/(4-( 5 )))"});
  auto free = text_until_trigger_gbnf("free", "<tool_call>", "call");
  out.push_back({"free_text_trigger",
                 shared_grammar(parse_gbnf("root ::= free-0\ncall ::= \"\\n{\\\"name\\\": \\\"\" [a-z_]+ \"\\\"}\"\n" +
                                           free.value()),
                                "free_text_trigger"),
                 "Sure, <b>I</b> will look it up < now.<tool_call>\n{\"name\": \"get_weather\"}"});
  out.push_back(
      {"string_escapes",
       shared_grammar(
           parse_gbnf(R"gbnf(root ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\"")gbnf"),
           "string_escapes"),
       R"("tab\there \"quoted\" \\ \u00e9\uD83D\uDE00 caf)"
       "\xC3\xA9 \xE4\xB8\xAD\xF0\x9F\x98\x80\""});
  out.push_back({"numbers", from_schema(R"({"type": "object", "required": ["n", "i", "f"], "properties": {
    "n": {"type": "number"}, "i": {"type": "integer", "minimum": -50, "maximum": 1200},
    "f": {"type": "number", "exclusiveMinimum": 0}}})"),
                 R"({"n": -12.5e+3, "i": 1199, "f": 0.001})"});
  out.push_back(
      {"non_ascii_classes",
       shared_grammar(
           parse_gbnf("root ::= [a-z\\u00E0-\\u00FF]+ ( \" \" [\\u03B1-\\u03C9]+ )* ( \" \" [\\u4E00-\\u9FFF]{1,3} )?"),
           "non_ascii"),
       "caf\xC3\xA9 \xCE\xB1\xCE\xB2 \xE4\xB8\xAD\xE6\x96\x87"});
  // Bounded repetitions count down through states that never loop (a domain label, the
  // whitespace of the schema compiler): whole subtrees are taken where every string of their
  // bytes is read as deep as their tokens go.
  out.push_back({"bounded_repetition",
                 shared_grammar(parse_gbnf(R"gbnf(
root  ::= label ( "." label ){1,3} ws "\"" [a-c]{2,6} "\""
label ::= [a-z0-9] ( [a-z0-9\-]{0,6} [a-z0-9] )?
ws    ::= ( " " | "\n" [ \t]{0,4} )?)gbnf"),
                                "bounded_repetition"),
                 "mail-1.example.org\n  \"abcab\""});
  out.push_back({"ambiguous",
                 shared_grammar(parse_gbnf(R"gbnf(
root ::= item+
item ::= [a-z] | [a-z] [a-z] | "ab" | word " "
word ::= [a-z]+)gbnf"),
                                "ambiguous"),
                 "abc de fgh ab"});
  return out;
}

void check_vocabulary(const std::shared_ptr<const TokenTrie>& trie, int n_walks, int max_tokens) {
  for (const Case& c : cases()) {
    ASSERT_NE(c.grammar, nullptr) << c.name;
    SCOPED_TRACE(c.name);
    expect_masks_match_reference(c.grammar, trie, c.guide, 1, n_walks, max_tokens, nullptr);  // fresh caches
    expect_masks_match_reference(c.grammar, trie, c.guide, 2, n_walks, max_tokens,
                                 std::make_shared<MaskCache>(c.grammar, trie));  // one shared cache
  }
}

std::shared_ptr<const TokenTrie> gguf_vocabulary(const std::string& path) {
  auto file = gguf::File::open(path);
  EXPECT_TRUE(file.ok()) << path;
  if (!file.ok()) return nullptr;
  auto tokenizer = tokenizer::Tokenizer::load(*file);
  EXPECT_TRUE(tokenizer.ok()) << path;
  if (!tokenizer.ok()) return nullptr;
  return engine::vocabulary_trie(*tokenizer, engine::end_of_generation_tokens(tokenizer->vocab()));
}

TEST(MaskOracle, SmallVocabulary) {
  const std::vector<std::string> vocab = small_vocabulary();
  const auto end = static_cast<int32_t>(vocab.size() - 1);
  check_vocabulary(std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{end}), 12, 80);
}

// Words under each letter (so that a string's inside takes most of a subtree) and a few that
// close the string and go on (`a",` `ab"}]`), split UTF-8 and escapes: the tokens that a
// looping state tries one by one, some of them uncertain.
std::vector<std::string> word_vocabulary() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, static_cast<char>(b));
  for (char a = 'a'; a <= 'z'; ++a) {
    for (char b = 'a'; b <= 'z'; ++b) {
      v.push_back({a, b});
      v.push_back({a, b, 'e'});
      v.push_back({a, b, 's', 't'});
    }
    for (const char* tail : {"\",", "\"}", "\"]", "\"},", "\"}]", "\":", "\"\n", "\\n", "\xC3\xA9", "\xE4\xB8", "<t",
                             "<tool_call>", " <", "1\""}) {
      v.push_back(std::string(1, a) + tail);
    }
  }
  v.emplace_back("");  // the end token
  return v;
}

TEST(MaskOracle, WordVocabulary) {
  const std::vector<std::string> vocab = word_vocabulary();
  const auto end = static_cast<int32_t>(vocab.size() - 1);
  check_vocabulary(std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{end}), 8, 80);
}

// A loop of ASCII alone (an email's local part) over a vocabulary of words, so that the root's
// runs are taken but for a few tokens: a token that goes on from its letters into UTF-8 is
// refused, though it holds no ASCII byte the loop refuses.
TEST(MaskOracle, AsciiLoopTakesTheRootsRuns) {
  std::vector<std::string> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(1, static_cast<char>(b));
  for (char a = 'a'; a <= 'z'; ++a) {
    for (char b = 'a'; b <= 'z'; ++b) {
      vocab.push_back({a, b});
      vocab.push_back({a, b, '!'});
    }
    for (const char* tail : {"\xC3\xA9", "@x", "\""}) vocab.push_back(std::string(1, a) + tail);
  }
  vocab.emplace_back("");  // the end token
  const auto trie =
      std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{static_cast<int32_t>(vocab.size() - 1)});
  const auto grammar = shared_grammar(
      parse_gbnf(R"gbnf(root ::= "\"" [a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+ "@" [a-z]+ "\"")gbnf"), "ascii_loop");
  ASSERT_NE(grammar, nullptr);
  expect_masks_match_reference(grammar, trie, "\"ab!cd@xyz\"", 1, 6, 20, nullptr);
}

// A token that pops a top down to its sentinel while another of its stacks reads on: the
// top alone never expands what lies below, but the whole state does, and where that expansion
// passes the matcher's budget (blow: 2^15 stacks) the reference refuses the token. Under the
// budget (2^10) the same token is allowed. The top (kKeptFrames) is p1 p2 p3 x, so `a` reaches
// the sentinel through the empty n's and reads on in the "n" or "ab" ones.
TEST(MaskOracle, BudgetBelowTheTop) {
  std::vector<std::string> vocab;
  for (int b = 0; b < 128; ++b) vocab.emplace_back(1, static_cast<char>(b));
  for (const char* piece : {"ab", "an", "abn", "nn", "nz", "az", "abz", "anz"}) vocab.emplace_back(piece);
  vocab.emplace_back("");  // the end token
  const auto trie =
      std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{static_cast<int32_t>(vocab.size() - 1)});
  const std::string below = "\nn ::= \"\" | \"n\"\no ::= \"\" | e\ne ::= \"\"\n";
  const std::string blow15 = "blow ::= o o o o o o o o o o o o o o o \"z\"";
  const std::string blow10 = "blow ::= o o o o o o o o o o \"z\"";
  const std::string pops = "root ::= p1 blow\np1 ::= p2 n\np2 ::= p3 n\np3 ::= x n\n";
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"two_stacks_over", pops + "x ::= \"a\" | \"ab\"\n" + blow15 + below},
           {"one_stack_over", pops + "x ::= \"a\" ( \"\" | \"b\" )\n" + blow15 + below},
           {"deeper_below_over", "root ::= w \"!\"\nw ::= p1 blow\n" + pops.substr(pops.find('\n') + 1) +
                                     "x ::= \"a\" | \"ab\"\n" + blow15 + below},
           {"two_stacks_under", pops + "x ::= \"a\" | \"ab\"\n" + blow10 + below}}) {
    SCOPED_TRACE(name);
    const auto grammar = shared_grammar(parse_gbnf(text), name);
    ASSERT_NE(grammar, nullptr);
    expect_masks_match_reference(grammar, trie, "abnnz", 1, 4, 8, nullptr);
  }
}

// A grammar that branches at every byte without looping at the top (each "e" may start the
// 20 bytes that end it: 2^21 states) makes the search for a subtree's strings
// (stack_tokens_ascii.cpp) explore every string of the subtree's bytes, not just its tokens;
// its budget keeps one walk's search bounded (about 17,000 states looked from; 109,000 without it),
// and the masks stay the reference's.
TEST(MaskOracle, ReadsToHasABudget) {
  std::vector<std::string> vocab;
  for (int b = 0; b < 128; ++b) vocab.emplace_back(1, static_cast<char>(b));
  std::mt19937 rng(7);
  const std::string alphabet = "abcdefghijklmnop";
  for (int w = 0; w < 400; ++w) {
    std::string word(1, 'e');
    const size_t length = 8 + rng() % 16;
    while (word.size() < length) word += alphabet[rng() % alphabet.size()];
    vocab.push_back(word);
  }
  vocab.emplace_back("");  // the end token
  const auto trie =
      std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{static_cast<int32_t>(vocab.size() - 1)});
  const auto grammar = shared_grammar(parse_gbnf(R"gbnf(root ::= [ -~]* "e" [ -~]{20})gbnf"), "branching");
  ASSERT_NE(grammar, nullptr);
  StackTokens tops(*grammar, trie);
  const Matcher start(grammar);
  for (const Stack& stack : start.stacks()) tops.of(stack, start.pending());
  EXPECT_LE(tops.reads_visits(), 40'000u);
  expect_masks_match_reference(grammar, trie, "abeabcdefghijklmnopabcdefgh", 1, 2, 12, nullptr);
}

TEST(MaskOracle, SingleBytes) {
  std::vector<std::string> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(1, static_cast<char>(b));
  vocab.emplace_back("");  // the end token
  check_vocabulary(std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{256}), 6, 120);
}

TEST(MaskOracle, ShippedModelVocabulary) {
  const auto trie =
      gguf_vocabulary((std::filesystem::path(GUFO_TEST_DATA_DIR) / "../../models/gufo-tiny-q8_0.gguf").string());
  ASSERT_NE(trie, nullptr);
  check_vocabulary(trie, 6, 60);
}

TEST(MaskOracle, VocabularyFromEnvironment) {
  const char* path = std::getenv("GUFO_MASK_ORACLE_VOCAB");
  if (path == nullptr) GTEST_SKIP() << "GUFO_MASK_ORACLE_VOCAB not set";
  const auto trie = gguf_vocabulary(path);
  ASSERT_NE(trie, nullptr);
  check_vocabulary(trie, 4, 60);
}

}  // namespace
}  // namespace gufo::grammar
