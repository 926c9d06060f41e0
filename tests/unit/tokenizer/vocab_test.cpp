// Vocab validation: every malformed tokenizer.ggml.* input gives an error naming the key,
// whether built directly or read from a GGUF written by gguf::Writer.
// Run: ctest --preset unit -R tokenizer_test
#include <gtest/gtest.h>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "test_vocab.h"
#include "tokenizer/vocab.h"

namespace gufo::tokenizer {
namespace {

using testing::small_vocab_spec;

void expect_error(const VocabSpec& spec, const std::string& needle) {
  auto vocab = build_vocab(spec, "t.gguf");
  ASSERT_FALSE(vocab.ok()) << "expected an error containing: " << needle;
  EXPECT_NE(vocab.error().message.find(needle), std::string::npos) << vocab.error().message;
  EXPECT_EQ(vocab.error().message.rfind("t.gguf: ", 0), 0u) << vocab.error().message;
}

TEST(TokenizerVocab, SmallVocabIsValid) {
  auto vocab = build_vocab(small_vocab_spec(), "t.gguf");
  ASSERT_TRUE(vocab.ok()) << vocab.error().message;
  EXPECT_EQ(vocab->n_vocab(), 263);
  EXPECT_EQ(vocab->merges.size(), 5u);
  EXPECT_EQ(vocab->eos_id, testing::kEnd);
}

TEST(TokenizerVocab, RejectsMalformedSpecs) {
  VocabSpec spec = small_vocab_spec();
  spec.model = "llama";
  expect_error(spec, "tokenizer.ggml.model: expected 'gpt2'");

  spec = small_vocab_spec();
  spec.pre = "gpt-4o";
  expect_error(spec, "unsupported pre-tokenizer 'gpt-4o'");

  spec = small_vocab_spec();
  spec.types.pop_back();
  expect_error(spec, "tokenizer.ggml.token_type: has 262 entries, tokenizer.ggml.tokens has 263");

  spec = small_vocab_spec();
  spec.types[5] = 9;
  expect_error(spec, "tokenizer.ggml.token_type 9 is not a llama.cpp token type");

  spec = small_vocab_spec();
  spec.merges.push_back("x zz");
  expect_error(spec, "tokenizer.ggml.merges[5] ('x zz'): refers to a token not in");

  spec = small_vocab_spec();
  spec.merges.push_back("x y");
  expect_error(spec, "the merged token is not in tokenizer.ggml.tokens");

  spec = small_vocab_spec();
  spec.merges.push_back("he");
  expect_error(spec, "expected two tokens separated by one space");

  spec = small_vocab_spec();
  spec.bos_id = 263;
  expect_error(spec, "tokenizer.ggml.bos_token_id: id 263 is out of range (n_vocab 263)");

  spec = small_vocab_spec();
  spec.add_bos = true;
  expect_error(spec, "add_bos_token is true but there is no bos_token_id");

  spec = small_vocab_spec();
  spec.tokens[65] = "AA";  // byte 'A' no longer has a token
  expect_error(spec, "no normal token for byte 65");

  spec = small_vocab_spec();
  spec.tokens[256] = "h\xE4llo";  // not GPT-2 byte-mapped text
  expect_error(spec, "a normal token must be non-empty GPT-2 byte-mapped text");

  spec = small_vocab_spec();
  spec.tokens.clear();
  spec.types.clear();
  expect_error(spec, "tokenizer.ggml.tokens: expected 1..");
}

// Writes the spec's keys to GGUF bytes, letting a test break one of them first.
std::vector<std::byte> write_gguf(const VocabSpec& spec, void (*tamper)(gguf::Writer&)) {
  gguf::Writer writer;
  writer.set("tokenizer.ggml.model", gguf::Value::string(spec.model));
  writer.set("tokenizer.ggml.pre", gguf::Value::string(spec.pre));
  writer.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::Array(spec.tokens)));
  writer.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::Array(spec.types)));
  writer.set("tokenizer.ggml.merges", gguf::Value::array(gguf::Array(spec.merges)));
  writer.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(static_cast<uint32_t>(spec.eos_id)));
  if (tamper) tamper(writer);
  return writer.to_bytes("t.gguf").value();
}

Result<Vocab> load_from(const std::vector<std::byte>& bytes) {
  GUFO_ASSIGN_OR_RETURN(gguf::File file, gguf::File::parse(bytes, "t.gguf"));
  return load_vocab(file);
}

TEST(TokenizerVocab, LoadsFromGguf) {
  const auto bytes = write_gguf(small_vocab_spec(), nullptr);
  auto vocab = load_from(bytes);
  ASSERT_TRUE(vocab.ok()) << vocab.error().message;
  EXPECT_EQ(vocab->n_vocab(), 263);
  EXPECT_EQ(vocab->types[testing::kThink], TokenType::UserDefined);
}

TEST(TokenizerVocab, GgufKeysOfTheWrongTypeAreErrors) {
  const auto wrong_tokens = write_gguf(small_vocab_spec(), [](gguf::Writer& w) {
    w.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::Array(std::vector<uint32_t>{1, 2})));
  });
  auto vocab = load_from(wrong_tokens);
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.error().message.find("tokenizer.ggml.tokens"), std::string::npos) << vocab.error().message;

  const auto wrong_eos = write_gguf(
      small_vocab_spec(), [](gguf::Writer& w) { w.set("tokenizer.ggml.eos_token_id", gguf::Value::string("7")); });
  vocab = load_from(wrong_eos);
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.error().message.find("tokenizer.ggml.eos_token_id"), std::string::npos) << vocab.error().message;

  const auto huge_eos = write_gguf(
      small_vocab_spec(), [](gguf::Writer& w) { w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(4000000000u)); });
  vocab = load_from(huge_eos);
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.error().message.find("out of range"), std::string::npos) << vocab.error().message;
}

TEST(TokenizerVocab, MissingModelKeyIsAnError) {
  gguf::Writer writer;
  writer.set("general.architecture", gguf::Value::string("qwen3"));
  const auto bytes = writer.to_bytes("t.gguf").value();
  auto vocab = load_from(bytes);
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.error().message.find("tokenizer.ggml.model"), std::string::npos) << vocab.error().message;
}

}  // namespace
}  // namespace gufo::tokenizer
