// TokenMatcher: the mask equals trying every token alone with a byte Matcher, and so does the
// reference walk (mask_oracle_test.cpp's oracle), at every step of a generation; control
// tokens (no bytes) are never allowed and end tokens only once the grammar is complete; an
// accepted token advances, a refused one changes nothing, and rollback(k) returns to the
// state (and mask) of k tokens before. ByteStates' twin bytes step as the Matcher does.
#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "grammar/byte_states.h"
#include "grammar/gbnf.h"
#include "grammar/json_gbnf.h"
#include "grammar/reference_mask.h"
#include "grammar/token_matcher.h"
#include "grammar_test_util.h"

namespace gufo::grammar {
namespace {

std::vector<bool> brute_force(const Matcher& state, const std::vector<std::string>& vocab, int32_t end_token) {
  std::vector<bool> allowed(vocab.size(), false);
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (vocab[id].empty()) continue;
    Matcher trial = state;
    allowed[id] = trial.accept(vocab[id]);
  }
  allowed[static_cast<size_t>(end_token)] = state.can_end();
  return allowed;
}

std::shared_ptr<const Grammar> parsed(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return std::make_shared<const Grammar>(std::move(g).value());
}

int32_t id_of(const std::vector<std::string>& vocab, const std::string& piece) {
  for (size_t i = 256; i < vocab.size(); ++i) {
    if (vocab[i] == piece) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(static_cast<unsigned char>(piece[0]));  // a single byte
}

TEST(TokenMatcher, MasksEqualTryingEveryTokenAlone) {
  const std::vector<std::string> vocab = small_vocabulary();
  const auto end = static_cast<int32_t>(vocab.size() - 1);
  const auto trie = std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{end});
  const auto grammar = parsed(kJsonObjectGbnf);
  TokenMatcher tokens(grammar, trie);
  ReferenceMasks reference(grammar, trie);
  Matcher bytes(grammar);
  // A generation, token by token, checking the mask before each.
  for (const std::string piece :
       {"{\"", "name", "\":", " \"", "\xC3", "\xA9t", "x\"", ", ", "\"x", "\":", "-3", ".5", "e+", "12", "}"}) {
    std::vector<bool> mask = allowed_bools(tokens, *trie);
    ASSERT_EQ(mask, brute_force(bytes, vocab, end)) << "before " << piece;
    std::vector<bool> oracle;  // the reference the mask oracle test holds the fast mask to
    reference.mask(bytes, oracle);
    ASSERT_EQ(oracle, mask) << "before " << piece;
    const int32_t id = id_of(vocab, piece);
    ASSERT_TRUE(mask[static_cast<size_t>(id)]) << piece;
    ASSERT_TRUE(tokens.accept_token(id)) << piece;
    ASSERT_TRUE(bytes.accept(piece));
  }
  std::vector<bool> mask = allowed_bools(tokens, *trie);
  EXPECT_TRUE(mask[static_cast<size_t>(end)]);       // {"name": "étx", "x": -3.5e+12} is whole
  EXPECT_FALSE(mask[static_cast<size_t>(end - 1)]);  // the control token never
  EXPECT_TRUE(tokens.accept_token(end));
}

TEST(TokenMatcher, SharedMasksAgreeWithTryingEveryTokenAcrossUtf8States) {
  // Single bytes as tokens (as byte-level vocabularies have): lead bytes of valid and of
  // surrogate or overlong sequences share cached states only where that cannot change what
  // may follow. Every mask must still equal the brute force, with one cache for all.
  std::vector<std::string> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(1, static_cast<char>(b));
  vocab.emplace_back("");  // the end token
  const auto end = static_cast<int32_t>(vocab.size() - 1);
  const auto trie = std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{end});
  const auto grammar = parsed(R"(root ::= "\"" [^"]* "\"")");
  const auto cache = std::make_shared<MaskCache>(grammar, trie);
  for (const std::string& text : {std::string("\"\xE4\xB8\xAD\xED\x9F\xBF\xE0\xA0\x80\xF4\x8F\xBF\xBF\""),
                                  std::string("\"\xED\x9F\xBF\xE4\xB8\xAD\xF0\x90\x80\x80\"")}) {
    TokenMatcher tokens(grammar, trie, cache);
    Matcher bytes(grammar);
    for (const char c : text) {
      std::vector<bool> mask = allowed_bools(tokens, *trie);
      ASSERT_EQ(mask, brute_force(bytes, vocab, end)) << testing::PrintToString(text);
      ASSERT_TRUE(tokens.accept_token(static_cast<uint8_t>(c)));
      ASSERT_TRUE(bytes.accept_byte(static_cast<uint8_t>(c)));
    }
  }
}

TEST(TokenMatcher, RefusedTokensChangeNothingAndRollbackRestores) {
  const std::vector<std::string> vocab = small_vocabulary();
  const auto end = static_cast<int32_t>(vocab.size() - 1);
  const auto trie = std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{end});
  TokenMatcher m(parsed(R"(root ::= "abc" [0-9]+)"), trie);
  std::vector<bool> at_start = allowed_bools(m, *trie);
  EXPECT_FALSE(m.accept_token(end));  // not complete yet
  EXPECT_FALSE(m.accept_token(id_of(vocab, "bc")));
  EXPECT_FALSE(m.accept_token(end - 1));
  EXPECT_FALSE(m.accept_token(static_cast<int32_t>(vocab.size())));
  EXPECT_TRUE(m.accept_token(id_of(vocab, "ab")));
  std::vector<bool> after_ab = allowed_bools(m, *trie);
  EXPECT_TRUE(after_ab[static_cast<size_t>(id_of(vocab, "c"))]);
  EXPECT_FALSE(after_ab[static_cast<size_t>(id_of(vocab, "abc"))]);
  EXPECT_TRUE(m.accept_token(id_of(vocab, "c")));
  EXPECT_TRUE(m.accept_token(id_of(vocab, "12")));
  EXPECT_TRUE(m.can_end());
  m.rollback(2);
  std::vector<bool> mask = allowed_bools(m, *trie);
  EXPECT_EQ(mask, after_ab);
  m.rollback(100);  // more than there are: back to the start
  mask = allowed_bools(m, *trie);
  EXPECT_EQ(mask, at_start);
  EXPECT_TRUE(mask[static_cast<size_t>(id_of(vocab, "abc"))]);
  EXPECT_TRUE(mask[static_cast<size_t>(id_of(vocab, "a"))]);
  EXPECT_FALSE(mask[static_cast<size_t>(id_of(vocab, "bc"))]);
}

// The state after `byte` from `from` by a fresh Matcher, as its key ("" where refused).
std::string key_after(const Matcher& from, uint8_t byte) {
  Matcher fresh = from;
  return fresh.accept_byte(byte) ? fresh.key() : std::string();
}

// ByteStates: every byte from every state met leads where a fresh Matcher goes, twin bytes
// included (those copy a step they did not take). The bytes go in descending order, so that
// a twin's step is first asked for by a byte that copies it (step() must take the twin's step
// then); and the twin groups split the ASCII bytes into bytes that a fresh Matcher takes to
// one state.
TEST(ByteStates, TwinBytesStepAsTheMatcherDoes) {
  for (const char* text : {kJsonObjectGbnf.data(), "root ::= [a-z] ( [a-z0-9-]{0,5} [a-z0-9] )? ( \".\" [a-z]+ )+",
                           "root ::= ( [0-9]+ | [0-9a-f]{2} \"x\" | [^0-9\\n]* )"}) {
    SCOPED_TRACE(text);
    const auto grammar = parsed(text);
    ByteStates states;
    states.intern(Matcher(grammar));
    for (uint32_t s = 0; s < states.size() && s < 300; ++s) {
      for (int byte = 255; byte >= 0; --byte) {
        const std::string fresh = key_after(states.state(s), static_cast<uint8_t>(byte));
        const int32_t to = states.step(s, static_cast<uint8_t>(byte));
        ASSERT_EQ(to != ByteStates::kRefused, !fresh.empty()) << "state " << s << " byte " << byte;
        if (to != ByteStates::kRefused) {
          ASSERT_EQ(states.state(static_cast<uint32_t>(to)).key(), fresh) << s << " " << byte;
        }
      }
      if (states.state(s).pending().due != 0) continue;
      const Matcher& from = states.state(s);
      ByteStates::AsciiBytes all = {0, 0};
      for (const ByteStates::AsciiBytes& group : states.twin_groups(s)) {
        ASSERT_EQ((all[0] & group[0]) | (all[1] & group[1]), 0u) << "groups overlap in state " << s;
        all = {all[0] | group[0], all[1] | group[1]};
        const int first = group[0] != 0 ? std::countr_zero(group[0]) : 64 + std::countr_zero(group[1]);
        const std::string first_key = key_after(from, static_cast<uint8_t>(first));
        for (int byte = 0; byte < 0x80; ++byte) {
          if ((group[byte >> 6] >> (byte & 63) & 1) == 0) continue;
          EXPECT_EQ(key_after(from, static_cast<uint8_t>(byte)), first_key) << s << " " << byte << " " << first;
        }
      }
      EXPECT_EQ(all, (ByteStates::AsciiBytes{~uint64_t{0}, ~uint64_t{0}})) << s;
    }
  }
}

}  // namespace
}  // namespace gufo::grammar
