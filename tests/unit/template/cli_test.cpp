// Runs the real `gufo render-template` (GUFO_BINARY) on a tiny vocab GGUF with a chat template:
// exact output (no newline added), the flags, and bad input as one "gufo: error:" line, exit 1.
// Run: ctest --test-dir build/default -R template
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../tokenizer/test_vocab.h"
#include "gguf/writer.h"

namespace gufo::tmpl {
namespace {

constexpr const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
    "{% if tools is defined %}[tools:{{ tools | length }}]{% endif %}"
    "{% if enable_thinking is defined %}[thinking:{{ enable_thinking }}]{% endif %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}{{ eos_token }}";

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class RenderTemplateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gufo_render_template_cli_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    model_ = write_model("model.gguf", true);
    bare_model_ = write_model("bare.gguf", false);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write_model(const std::string& name, bool with_template) {
    tokenizer::VocabSpec spec = tokenizer::testing::small_vocab_spec();
    gguf::Writer writer;
    writer.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
    writer.set("tokenizer.ggml.pre", gguf::Value::string("qwen2"));
    writer.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::Array(spec.tokens)));
    writer.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::Array(spec.types)));
    writer.set("tokenizer.ggml.merges", gguf::Value::array(gguf::Array(spec.merges)));
    writer.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(262));
    writer.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(261));
    if (with_template) writer.set("tokenizer.chat_template", gguf::Value::string(kTemplate));
    const std::string path = (dir_ / name).string();
    EXPECT_TRUE(writer.write(path).ok());
    return path;
  }

  std::string file(const std::string& name, const std::string& text) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  RunResult run(const std::string& args) {
    const std::string command = std::string("'") + GUFO_BINARY + "' render-template " + args + " >'" +
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
  // One line on stderr that starts "gufo: error: " and mentions `needle`; exit code 1.
  static void expect_failure(const RunResult& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("gufo: error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }

  std::filesystem::path dir_;
  std::string model_, bare_model_;
};

TEST_F(RenderTemplateCli, RendersMessagesExactly) {
  const std::string messages = file("m.json", R"([{"role": "user", "content": "hi"}])");
  RunResult r = run("-m '" + model_ + "' --messages '" + messages + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<think><user>hi<assistant><|end|>");
  r = run("-m '" + model_ + "' --messages '" + messages + "' --no-generation-prompt --no-thinking");
  EXPECT_EQ(r.out, "<think><user>hi[thinking:false]<|end|>");
}

TEST_F(RenderTemplateCli, AcceptsAnObjectWithToolsAndATemplateFile) {
  const std::string messages =
      file("m.json", R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})");
  RunResult r = run("-m '" + model_ + "' --messages '" + messages + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<think><user>x[tools:1]<assistant><|end|>");
  const std::string tools = file("t.json", R"([{"a": 1}, {"b": 2}])");
  const std::string plain = file("plain.json", R"([{"role": "user", "content": "x"}])");
  r = run("-m '" + bare_model_ + "' --messages '" + plain + "' --tools '" + tools + "' --template '" +
          file("t.jinja", "{{ messages[0].content }}{{ tools | length }}{{ eos_token }}") + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "x2<|end|>");
}

TEST_F(RenderTemplateCli, BadInputIsOneLineAndExitOne) {
  const std::string good = file("good.json", R"([{"role": "user", "content": "hi"}])");
  expect_failure(run("-m '" + model_ + "' --messages '" + (dir_ / "missing.json").string() + "'"), "missing.json");
  expect_failure(run("-m '" + model_ + "' --messages '" + file("bad.json", "[{") + "'"), "invalid JSON");
  expect_failure(run("-m '" + model_ + "' --messages '" + file("s.json", "\"hello\"") + "'"), "expected a JSON array");
  expect_failure(run("-m '" + model_ + "' --messages '" + file("o.json", R"({"messages": {"role": "user"}})") + "'"),
                 "expected a JSON array");
  expect_failure(run("-m '" + model_ + "' --messages '" + good + "' --tools '" + file("t.txt", "tools: none") + "'"),
                 "t.txt: invalid JSON");
  expect_failure(run("-m '" + bare_model_ + "' --messages '" + good + "'"), "no tokenizer.chat_template");
  expect_failure(run("-m '" + (dir_ / "nope.gguf").string() + "' --messages '" + good + "'"), "nope.gguf");
  expect_failure(run("-m '" + model_ + "' --messages '" + good + "' --template '" +
                     file("f.jinja", "line one\n{{ messages | no_such_filter }}") + "'"),
                 "f.jinja: chat template line 2: unknown filter 'no_such_filter'");
  expect_failure(run("-m '" + model_ + "' --messages '" + good + "' --template '" +
                     file("r.jinja", "{{ raise_exception('no thanks') }}") + "'"),
                 "no thanks");
  expect_failure(run("-m '" + model_ + "' --messages '" + good + "' --template '" +
                     file("u.jinja", "{% if messages %}unclosed") + "'"),
                 "u.jinja: chat template line 1: missing");
}

}  // namespace
}  // namespace gufo::tmpl
