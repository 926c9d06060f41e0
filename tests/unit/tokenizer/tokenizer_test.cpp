// Tokenizer: BPE by rank on a tiny vocab, special-token matching, the streaming
// detokenizer's hold-back of partial UTF-8, and round trips of random valid UTF-8.
// Run: ctest --preset unit -R tokenizer_test
#include <gtest/gtest.h>

#include <random>

#include "test_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace gufo::tokenizer {
namespace {

using namespace testing;  // NOLINT: the test vocab's ids

Tokenizer small_tokenizer(const std::string& pre = "qwen2") {
  VocabSpec spec = small_vocab_spec();
  spec.pre = pre;
  return Tokenizer(build_vocab(spec, "t.gguf").value());
}

TEST(Tokenizer, MergesByRank) {
  const Tokenizer tok = small_tokenizer();
  EXPECT_EQ(tok.encode("hello", false), (std::vector<int32_t>{kHello}));
  EXPECT_EQ(tok.encode("hell", false), (std::vector<int32_t>{kHell}));
  EXPECT_EQ(tok.encode("helo", false), (std::vector<int32_t>{kHe, 'l', 'o'}));
  // "h e" outranks "\xC4\xA0 h", so the space stays alone.
  EXPECT_EQ(tok.encode("hello hello", false), (std::vector<int32_t>{kHello, ' ', kHello}));
  EXPECT_EQ(tok.encode(" h", false), (std::vector<int32_t>{kSpaceH}));
  EXPECT_EQ(tok.encode("", false), (std::vector<int32_t>{}));
}

TEST(Tokenizer, ControlTokensOnlyWhenAsked) {
  const Tokenizer tok = small_tokenizer();
  EXPECT_EQ(tok.encode("a<|end|>", true), (std::vector<int32_t>{'a', kEnd}));
  const std::vector<int32_t> plain = tok.encode("a<|end|>", false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), kEnd), 0);
  EXPECT_EQ(tok.decode(plain).value(), "a<|end|>");
  // User-defined tokens are always matched (llama.cpp and Hugging Face do the same).
  EXPECT_EQ(tok.encode("<think>hello", false), (std::vector<int32_t>{kThink, kHello}));
}

TEST(Tokenizer, DecodeRejectsBadIds) {
  const Tokenizer tok = small_tokenizer();
  const std::vector<int32_t> ids = {kHello, 263};
  auto text = tok.decode(ids);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("token id 263 is out of range"), std::string::npos);
}

TEST(Tokenizer, StreamingDetokenizerHoldsBackPartialUtf8) {
  const Tokenizer tok = small_tokenizer();
  Detokenizer stream(tok);
  // U+20AC EURO SIGN is E2 82 AC: one byte token each.
  EXPECT_EQ(stream.push('a').value(), "a");
  EXPECT_EQ(stream.push(0xE2).value(), "");
  EXPECT_EQ(stream.push(0x82).value(), "");
  EXPECT_EQ(stream.push(0xAC).value(), "\xE2\x82\xAC");
  // A 4-byte emoji, then a sequence cut short: finish() passes the rest through.
  EXPECT_EQ(stream.push(0xF0).value(), "");
  EXPECT_EQ(stream.push(0x9F).value(), "");
  EXPECT_EQ(stream.push(0x98).value(), "");
  EXPECT_EQ(stream.push(0x80).value(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(stream.push(kHello).value(), "hello");
  EXPECT_EQ(stream.push(0xC3).value(), "");
  EXPECT_EQ(stream.finish(), "\xC3");
  EXPECT_FALSE(stream.push(999).ok());
}

TEST(Tokenizer, CompleteUtf8Prefix) {
  EXPECT_EQ(complete_utf8_prefix(""), 0u);
  EXPECT_EQ(complete_utf8_prefix("ab"), 2u);
  EXPECT_EQ(complete_utf8_prefix("a\xE2\x82"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xE2\x82\xAC"), 4u);
  EXPECT_EQ(complete_utf8_prefix("\x80\x80\x80\x80"), 4u);  // stray continuations: not held
}

// Random codepoints from several scripts, emoji, combining marks, whitespace and digits.
std::string random_utf8(std::mt19937& rng, int n_chars) {
  static const char32_t ranges[][2] = {{0x20, 0x7E},     {0x09, 0x0D},       {0xA0, 0x24F},   {0x300, 0x36F},
                                       {0x400, 0x4FF},   {0x600, 0x6FF},     {0x900, 0x97F},  {0x3040, 0x30FF},
                                       {0x4E00, 0x9FFF}, {0x1F300, 0x1FAFF}, {0x2000, 0x206F}};
  std::uniform_int_distribution<size_t> pick(0, std::size(ranges) - 1);
  std::string out;
  for (int i = 0; i < n_chars; ++i) {
    const auto& range = ranges[pick(rng)];
    std::uniform_int_distribution<uint32_t> cp(range[0], range[1]);
    append_utf8(out, cp(rng));
  }
  return out;
}

TEST(Tokenizer, RandomUtf8RoundTrips) {
  // NOTE(test): Llama 3's pre-tokenizer has no normalizer, so every byte must come back.
  const Tokenizer tok = small_tokenizer("llama-bpe");
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 300; ++iter) {
    const std::string text = random_utf8(rng, 1 + iter % 40);
    const std::vector<int32_t> ids = tok.encode(text, false);
    ASSERT_EQ(tok.decode(ids).value(), text);
    Detokenizer stream(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id).value();
    streamed += stream.finish();
    ASSERT_EQ(streamed, text);
  }
}

TEST(Tokenizer, InvalidUtf8RoundTripsByteForByte) {
  const Tokenizer tok = small_tokenizer("llama-bpe");
  const std::string text = "ok\xFF\xC3(\xE2\x82 hello\x80";
  EXPECT_EQ(tok.decode(tok.encode(text, false)).value(), text);
}

}  // namespace
}  // namespace gufo::tokenizer
