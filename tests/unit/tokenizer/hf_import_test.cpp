// HF import: a tokenizer.json built in the test converts to keys that load back; merges in
// both spellings; unsupported regexes, normalizers and bad ids are clear errors.
// Run: ctest --preset unit -R tokenizer_test
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "gguf/file.h"
#include "test_vocab.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/tokenizer.h"

namespace gufo::tokenizer {
namespace {

using nlohmann::json;

// NOTE(test): Llama 3's split regex, exactly as in its tokenizer.json.
const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json small_tokenizer_json() {
  const VocabSpec spec = testing::small_vocab_spec();
  json vocab = json::object();
  for (int id = 0; id < 261; ++id) vocab[spec.tokens[id]] = id;
  json merges = json::array();
  merges.push_back("h e");
  merges.push_back(json::array({"l", "l"}));  // the newer pair spelling
  merges.push_back("he ll");
  merges.push_back("hell o");
  merges.push_back(testing::mapped_byte(' ') + " h");
  json pre = {{"type", "Sequence"},
              {"pretokenizers",
               json::array({{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Regex}}}, {"behavior", "Isolated"}}})}};
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
          {"added_tokens", json::array({{{"id", 261}, {"content", "<|end|>"}, {"special", true}},
                                        {{"id", 262}, {"content", "<think>"}, {"special", false}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre}};
}

class HfImport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gufo_hf_import_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const json& value) { std::ofstream(dir_ / name) << value.dump(); }
  std::filesystem::path dir_;
};

TEST_F(HfImport, ConvertsAndLoadsBack) {
  write("tokenizer.json", small_tokenizer_json());
  write("tokenizer_config.json", {{"eos_token", "<|end|>"}, {"chat_template", "{{ x }}"}});
  auto writer = import_hf_tokenizer(dir_.string());
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  const auto bytes = writer->to_bytes("t.gguf").value();
  auto file = gguf::File::parse(bytes, "t.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->get_string("tokenizer.ggml.pre").value(), "llama-bpe");
  EXPECT_EQ(file->get_string("tokenizer.chat_template").value(), "{{ x }}");
  EXPECT_EQ(file->get_u32("tokenizer.ggml.eos_token_id").value(), 261u);
  auto tok = Tokenizer::load(*file);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  EXPECT_EQ(tok->encode("hello<|end|>", true), (std::vector<int32_t>{testing::kHello, testing::kEnd}));
  EXPECT_EQ(tok->vocab().types[testing::kThink], TokenType::UserDefined);
}

TEST_F(HfImport, MissingTokenizerJson) {
  auto writer = import_hf_tokenizer(dir_.string());
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.error().message.find("tokenizer.json: cannot open"), std::string::npos);
}

TEST_F(HfImport, Errors) {
  const auto expect_error = [&](const json& tokenizer, const std::string& needle) {
    write("tokenizer.json", tokenizer);
    auto writer = import_hf_tokenizer(dir_.string());
    ASSERT_FALSE(writer.ok()) << needle;
    EXPECT_NE(writer.error().message.find(needle), std::string::npos) << writer.error().message;
  };
  json bad = small_tokenizer_json();
  bad["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+";
  expect_error(bad, "pre_tokenizer: unsupported Split regex '\\s+'");

  bad = small_tokenizer_json();
  bad["normalizer"] = {{"type", "NFKC"}};
  expect_error(bad, "normalizer: unsupported");

  bad = small_tokenizer_json();
  bad["normalizer"] = {{"type", "NFC"}};
  expect_error(bad, "the llama-bpe pre-tokenizer does not take an NFC normalizer");

  bad = small_tokenizer_json();
  bad["model"]["vocab"]["zz"] = -4;
  expect_error(bad, "model.vocab['zz']: id must be an integer");

  bad = small_tokenizer_json();
  bad["model"]["merges"].push_back(json::array({"a"}));
  expect_error(bad, "model.merges[5]: expected");

  bad = small_tokenizer_json();
  bad["model"]["merges"].push_back("q zz");
  expect_error(bad, "tokenizer.ggml.merges[5] ('q zz'): refers to a token not in");

  bad = small_tokenizer_json();
  bad["model"]["type"] = "Unigram";
  expect_error(bad, "model.type: expected \"BPE\"");

  write("tokenizer.json", small_tokenizer_json());
  write("tokenizer_config.json", {{"bos_token", "<s>"}});
  auto writer = import_hf_tokenizer(dir_.string());
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.error().message.find("bos_token: '<s>' is not a token"), std::string::npos)
      << writer.error().message;
}

}  // namespace
}  // namespace gufo::tokenizer
