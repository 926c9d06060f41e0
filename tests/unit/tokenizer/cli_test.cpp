// Runs the real `gufo tokenize`, `gufo detokenize` and `gufo convert` (GUFO_BINARY) on a tiny
// vocab GGUF: outputs in each mode, and bad input as one line on stderr with exit code 1.
// Run: ctest --preset unit -R tokenizer_test
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf/writer.h"
#include "test_vocab.h"

namespace gufo::tokenizer {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class TokenizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gufo_tokenize_cli_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    const VocabSpec spec = testing::small_vocab_spec();
    gguf::Writer writer;
    writer.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
    writer.set("tokenizer.ggml.pre", gguf::Value::string("qwen2"));
    writer.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::Array(spec.tokens)));
    writer.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::Array(spec.types)));
    writer.set("tokenizer.ggml.merges", gguf::Value::array(gguf::Array(spec.merges)));
    model_ = (dir_ / "small.gguf").string();
    ASSERT_TRUE(writer.write(model_).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RunResult run(const std::string& args, const std::string& input) {
    std::ofstream(dir_ / "in", std::ios::binary) << input;
    const std::string command = std::string("'") + GUFO_BINARY + "' " + args + " <'" + (dir_ / "in").string() + "' >'" +
                                (dir_ / "out").string() + "' 2>'" + (dir_ / "err").string() + "'";
    const int status = std::system(command.c_str());
    RunResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = read(dir_ / "out");
    result.err = read(dir_ / "err");
    return result;
  }
  static std::string read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  std::filesystem::path dir_;
  std::string model_;
};

TEST_F(TokenizeCli, Modes) {
  EXPECT_EQ(run("tokenize -m " + model_, "hello<|end|>").out, "259 60 124 101 110 100 124 62\n");
  EXPECT_EQ(run("tokenize -m " + model_ + " --special --json", "hello<|end|>").out, "[259,261]\n");
  EXPECT_EQ(run("tokenize -m " + model_ + " --json-lines", "\"hello\"\n\"h\"\n").out, "[259]\n[104]\n");
  EXPECT_EQ(run("detokenize -m " + model_, "[259, 261]").out, "hello<|end|>");
  EXPECT_EQ(run("detokenize -m " + model_ + " --json-lines", "[259]\n[104,105]\n").out, "\"hello\"\n\"hi\"\n");
}

TEST_F(TokenizeCli, BadInputIsOneLineAndExitCode1) {
  const auto expect_error = [&](const std::string& args, const std::string& input, const std::string& needle) {
    const RunResult result = run(args, input);
    EXPECT_EQ(result.exit_code, 1) << args;
    EXPECT_NE(result.err.find(needle), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  };
  expect_error("detokenize -m " + model_, "[1, 263]", "token id 263 is out of range (n_vocab 263)");
  expect_error("detokenize -m " + model_, "[1, \"x\"]", "expected a token id");
  expect_error("detokenize -m " + model_, "{}", "expected a JSON array of ids");
  expect_error("tokenize -m " + model_ + " --json-lines", "\"ok\"\nnot json\n", "stdin line 2: expected a JSON string");
  expect_error("tokenize -m " + (dir_ / "missing.gguf").string(), "", "missing.gguf");
  expect_error("convert " + dir_.string() + " -o " + (dir_ / "x.gguf").string() + " --vocab-only", "",
               "tokenizer.json: cannot open");
}

}  // namespace
}  // namespace gufo::tokenizer
