// TokenTrie and is_utf8_prefix: UTF-8 validity as the byte Matcher reads it (every 1- and
// 2-byte string, and 3- and 4-byte ones around each lead byte); each node's tokens are the
// run of tokens_in_order() with its prefix; the byte summaries and the byte index hold what
// the tokens below hold (their bytes and the deepest), and the tokens' bytes are kept in trie
// order; TokenSet keeps the same set in each of its forms, and count_bits counts as
// std::popcount does.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_set.h"
#include "grammar/token_trie.h"
#include "grammar/utf8_prefix.h"
#include "grammar_test_util.h"

namespace gufo::grammar {
namespace {

TEST(Utf8Prefix, AgreesWithTheMatcherOverAnyCodePoint) {
  const auto any = shared_grammar(parse_gbnf(R"(root ::= [^\x00]* )"), "any");
  ASSERT_NE(any, nullptr);
  const auto matcher_reads = [&](const std::string& bytes) {
    Matcher m(any);
    return m.accept(bytes);
  };
  std::vector<std::string> inputs;
  for (int a = 1; a < 256; ++a) {
    for (int b = 1; b < 256; ++b) inputs.push_back({static_cast<char>(a), static_cast<char>(b)});
    for (const int c : {0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0}) {
      for (const int d : {0x41, 0x80, 0xBF, 0xC2}) {
        inputs.push_back({static_cast<char>(a), static_cast<char>(c), static_cast<char>(d)});
        inputs.push_back({static_cast<char>(a), static_cast<char>(c), static_cast<char>(0x80), static_cast<char>(d)});
      }
    }
  }
  for (const std::string& bytes : inputs) {
    ASSERT_EQ(is_utf8_prefix(bytes), matcher_reads(bytes)) << testing::PrintToString(bytes);
  }
}

TEST(TokenTrie, RunsSummariesAndIndexHoldTheTokensBelow) {
  const std::vector<std::string> vocab = small_vocabulary();
  const auto end = static_cast<int32_t>(vocab.size() - 1);
  const TokenTrie trie(vocab, {end});
  const auto& order = trie.tokens_in_order();
  ASSERT_EQ(order.size(), vocab.size() - 2);  // the control and end tokens have no bytes
  // Each node: its prefix, rebuilt from the root, starts every token of its run.
  std::vector<std::string> prefix(trie.nodes().size());
  for (size_t n = 0; n < trie.nodes().size(); ++n) {
    const TokenTrie::Node& node = trie.nodes()[n];
    for (uint32_t c = 0; c < node.n_children; ++c)
      prefix[node.first_child + c] = prefix[n] + static_cast<char>(trie.nodes()[node.first_child + c].byte);
    for (uint32_t i = node.first_token; i < node.end_token; ++i) {
      const std::string& token = vocab[static_cast<size_t>(order[i])];
      ASSERT_TRUE(token.starts_with(prefix[n])) << n;
      ASSERT_EQ(i < node.first_token + node.n_tokens, token == prefix[n]) << n;
    }
    if (node.below == TokenTrie::kNoSummary) continue;
    BytesBelow expected;
    for (uint32_t i = node.first_token + node.n_tokens; i < node.end_token; ++i) {
      const std::string& token = vocab[static_cast<size_t>(order[i])];
      expected.utf8 = expected.utf8 && is_utf8_prefix(token);
      expected.depth = std::max(expected.depth, static_cast<uint8_t>(token.size() - prefix[n].size()));
      for (size_t k = prefix[n].size(); k < token.size(); ++k) {
        const auto byte = static_cast<uint8_t>(token[k]);
        if (byte >= 0x80)
          expected.non_ascii = true;
        else
          expected.ascii[byte >> 6] |= uint64_t{1} << (byte & 63);
      }
    }
    EXPECT_EQ(trie.bytes_below(node).ascii, expected.ascii) << n;
    EXPECT_EQ(trie.bytes_below(node).non_ascii, expected.non_ascii) << n;
    EXPECT_EQ(trie.bytes_below(node).utf8, expected.utf8) << n;
    EXPECT_EQ(trie.bytes_below(node).depth, expected.depth) << n;
  }
  for (uint32_t position = 0; position < order.size(); ++position) {
    const std::string& token = vocab[static_cast<size_t>(order[position])];
    for (int byte = 0; byte < 0x80; ++byte) {
      const auto& with = trie.positions_with(static_cast<uint8_t>(byte));
      EXPECT_EQ(std::binary_search(with.begin(), with.end(), position),
                token.find(static_cast<char>(byte)) != std::string::npos);
    }
    const auto& bad = trie.positions_not_utf8();
    EXPECT_EQ(std::binary_search(bad.begin(), bad.end(), position), !is_utf8_prefix(token));
    const auto& wide = trie.positions_non_ascii();
    EXPECT_EQ(std::binary_search(wide.begin(), wide.end(), position),
              std::any_of(token.begin(), token.end(), [](char c) { return static_cast<uint8_t>(c) >= 0x80; }));
    EXPECT_EQ(trie.bytes_at(position), token);
  }
}

TEST(TokenSet, EveryFormHoldsTheSameTokens) {
  // A vocabulary big enough for all three forms: 4,096 two-byte tokens and one without bytes.
  std::vector<std::string> vocab;
  for (int a = 0; a < 64; ++a) {
    for (int b = 0; b < 64; ++b) vocab.push_back({static_cast<char>('0' + a), static_cast<char>('0' + b)});
  }
  vocab.emplace_back("");
  const TokenTrie trie(vocab, {});
  const auto n = static_cast<uint32_t>(trie.tokens_in_order().size());
  const std::vector<std::vector<std::pair<uint32_t, uint32_t>>> cases = {
      {}, {{5, 9}}, {{0, n}}, {{0, n - 3}}, {{0, 100}, {2000, 2100}}, {{0, 1500}, {2500, n}}};
  for (const auto& runs : cases) {
    TokenBits bits(trie.token_bits().size(), 0);
    TokenSet(trie, runs).add_to(trie, bits);
    std::vector<bool> got;
    bits_to_bools(bits, trie.n_vocab(), got);
    std::vector<bool> expected(vocab.size(), false);
    for (const auto& [begin, end] : runs) {
      for (uint32_t i = begin; i < end; ++i) expected[static_cast<size_t>(trie.tokens_in_order()[i])] = true;
    }
    EXPECT_EQ(got, expected) << testing::PrintToString(runs);
  }
}

TEST(TokenSet, CountBitsAgreesWithPopcount) {
  uint64_t w = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 1000; ++i) {
    w ^= w << 13;
    w ^= w >> 7;
    w ^= w << 17;
    ASSERT_EQ(count_bits(w), std::popcount(w)) << w;
    ASSERT_EQ(count_bits(w & (w >> 3)), std::popcount(w & (w >> 3))) << w;
  }
  EXPECT_EQ(count_bits(0), 0);
  EXPECT_EQ(count_bits(~uint64_t{0}), 64);
}

}  // namespace
}  // namespace gufo::grammar
