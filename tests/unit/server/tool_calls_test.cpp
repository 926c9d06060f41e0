// Qwen/Hermes tool calls out of generated text: one or several blocks, text around them,
// arguments as an object (members in the model's order) or a string, malformed blocks left
// as text, a block cut short by max_tokens, and how much of a stream can go out before a
// block starts. Llama 3's JSON calls the same way, and which syntax a real template teaches
// (tests/data: Qwen3's and Llama 3.1's templates, and one that says nothing of tools).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "server/tool_calls.h"

namespace gufo::server {
namespace {

const std::vector<std::string> kOffered = {"get_weather", "get_time", "now", "f"};

TEST(ToolCalls, ParsesBlocksAndKeepsTheTextAround) {
  const ParsedAnswer a = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"UTC\\\"}\"}\n</tool_call>",
      kOffered);
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.content, "Let me check.");
  EXPECT_EQ(a.tool_calls[0].name, "get_weather");
  EXPECT_EQ(a.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(a.tool_calls[1].arguments, "{\"tz\": \"UTC\"}");
  EXPECT_EQ(a.tool_calls[0].id.rfind("call_", 0), 0u);
  EXPECT_NE(a.tool_calls[0].id, a.tool_calls[1].id);
}

// As OpenAI's API does, the arguments keep the members in the order the model wrote them
// (the order a tool's grammar fixes); they came back sorted by name before.
TEST(ToolCalls, ArgumentsKeepTheModelsMemberOrder) {
  const ParsedAnswer a = parse_tool_calls(
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"pattern\": \"*.log\", \"directory\": \"/var\", "
      "\"options\": {\"recursive\": true, \"max_results\": 2}}}\n</tool_call>",
      kOffered);
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].arguments,
            "{\"pattern\":\"*.log\",\"directory\":\"/var\",\"options\":{\"recursive\":true,\"max_results\":2}}");
}

TEST(ToolCalls, NoArgumentsMeansAnEmptyObject) {
  const ParsedAnswer a = parse_tool_calls("<tool_call>{\"name\": \"now\"}</tool_call>", kOffered);
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].arguments, "{}");
  EXPECT_EQ(a.content, "");
}

TEST(ToolCalls, MalformedBlocksStayText) {
  const std::string text = "x <tool_call>{\"name\": 5}</tool_call> y <tool_call>not json</tool_call>";
  const ParsedAnswer a = parse_tool_calls(text, kOffered);
  EXPECT_TRUE(a.tool_calls.empty());
  EXPECT_EQ(a.content, text);
  EXPECT_EQ(parse_tool_calls("plain answer", kOffered).content, "plain answer");
}

TEST(ToolCalls, ABlockCutShortStillParsesIfItsJsonIsWhole) {
  const ParsedAnswer a = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n", kOffered);
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_TRUE(parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"argu", kOffered).tool_calls.empty());
}

TEST(ToolCalls, StreamsTextUpToABlock) {
  EXPECT_EQ(content_before_tool_call("hello"), 5u);
  EXPECT_EQ(content_before_tool_call("hello <tool_call>{"), 6u);
  EXPECT_EQ(content_before_tool_call("hello <tool_"), 6u);  // could still become a block
  EXPECT_EQ(content_before_tool_call("a < b"), 5u);
}

TEST(ToolCalls, ACallToAToolThatWasNotOfferedStaysText) {
  const std::string text =
      "<tool_call>{\"name\": \"get_time\"}</tool_call>\n<tool_call>{\"name\": \"rm_rf\"}</tool_call>";
  const std::vector<std::string> only_time = {"get_time"};
  const ParsedAnswer a = parse_tool_calls(text, only_time);
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].name, "get_time");
  EXPECT_EQ(a.content, "<tool_call>{\"name\": \"rm_rf\"}</tool_call>");
  const ParsedAnswer none = parse_tool_calls(text, {});
  EXPECT_TRUE(none.tool_calls.empty());
  EXPECT_EQ(none.content, text);
}

TEST(ToolCalls, ALlama3CallIsTheAnswersJsonObject) {
  constexpr ToolSyntax kLlama3 = ToolSyntax::Llama3;
  const ParsedAnswer a =
      parse_tool_calls("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", kOffered, kLlama3);
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].name, "get_weather");
  EXPECT_EQ(a.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(a.content, "");
  // After <|python_tag|>, after text (which stays content), with "arguments" for "parameters".
  const ParsedAnswer tagged =
      parse_tool_calls("<|python_tag|>{\"name\": \"now\", \"parameters\": {}}", kOffered, kLlama3);
  ASSERT_EQ(tagged.tool_calls.size(), 1u);
  EXPECT_EQ(tagged.content, "");
  const ParsedAnswer after =
      parse_tool_calls("Let me {look}.\n{\"name\": \"now\", \"arguments\": {\"tz\": \"UTC\"}}", kOffered, kLlama3);
  ASSERT_EQ(after.tool_calls.size(), 1u);
  EXPECT_EQ(after.content, "Let me {look}.");
  EXPECT_EQ(after.tool_calls[0].arguments, "{\"tz\":\"UTC\"}");
  const ParsedAnswer bare = parse_tool_calls("{\"name\": \"now\"}", kOffered, kLlama3);
  ASSERT_EQ(bare.tool_calls.size(), 1u);
  EXPECT_EQ(bare.tool_calls[0].arguments, "{}");
}

TEST(ToolCalls, ALlama3AnswerThatIsNoCallStaysText) {
  constexpr ToolSyntax kLlama3 = ToolSyntax::Llama3;
  for (const std::string& text :
       {std::string("It is sunny."), std::string("{\"name\": \"rm_rf\", \"parameters\": {}}"),
        std::string("{\"name\": \"now\", \"parameters\": {}} and more"),
        std::string("{\"name\": \"now\", \"parameters\": 3}"), std::string("{\"name\": \"now\", \"param")}) {
    const ParsedAnswer a = parse_tool_calls(text, kOffered, kLlama3);
    EXPECT_TRUE(a.tool_calls.empty()) << text;
    EXPECT_EQ(a.content, text);
  }
  // Hermes blocks are not Llama 3 calls, nor the other way round.
  EXPECT_TRUE(parse_tool_calls("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>", kOffered, kLlama3)
                  .tool_calls.empty());
  EXPECT_TRUE(parse_tool_calls("{\"name\": \"now\", \"parameters\": {}}", kOffered).tool_calls.empty());
}

TEST(ToolCalls, StreamsLlama3TextUpToACallOpening) {
  constexpr ToolSyntax kLlama3 = ToolSyntax::Llama3;
  EXPECT_EQ(content_before_tool_call("hello", kLlama3), 5u);
  EXPECT_EQ(content_before_tool_call("hi {\"name\": \"now\"", kLlama3), 3u);
  EXPECT_EQ(content_before_tool_call("hi {\"na", kLlama3), 3u);  // could still become a call
  EXPECT_EQ(content_before_tool_call("a {b} c", kLlama3), 7u);
  EXPECT_EQ(content_before_tool_call("hi <|python_tag|>{", kLlama3), 3u);  // the tag goes with the call
  EXPECT_EQ(content_before_tool_call("hi <|python", kLlama3), 3u);
  EXPECT_EQ(tool_calls_text(" <|python_tag|>{\"name\": ", kLlama3), "{\"name\": ");
  EXPECT_EQ(tool_calls_text("<|python_tag|>x", ToolSyntax::Hermes), "<|python_tag|>x");
  EXPECT_EQ(tool_call_open(kLlama3), "{\"name\": ");
  EXPECT_EQ(tool_call_open(ToolSyntax::Hermes), "<tool_call>");
}

std::string template_of(const std::string& model) {
  std::ifstream in(std::string(GUFO_TEST_DATA_DIR) + "/models/" + model + "/tokenizer_config.json");
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return config.is_object() && config.contains("chat_template") ? config["chat_template"].get<std::string>() : "";
}

TEST(ToolCalls, TheTemplateTellsTheSyntax) {
  std::ifstream llama31(std::string(GUFO_TEST_DATA_DIR) + "/templates/llama3.1-instruct.jinja");
  std::stringstream text;
  text << llama31.rdbuf();
  ASSERT_FALSE(text.str().empty());
  EXPECT_EQ(tool_syntax_of(text.str()), ToolSyntax::Llama3);
  const std::string qwen3 = template_of("tiny-qwen3");
  ASSERT_FALSE(qwen3.empty());
  EXPECT_EQ(tool_syntax_of(qwen3), ToolSyntax::Hermes);
  const std::string no_tools = template_of("tiny-llama");  // a chat template that says nothing of tools
  ASSERT_FALSE(no_tools.empty());
  EXPECT_EQ(tool_syntax_of(no_tools), ToolSyntax::Hermes);
  // "name" and "parameters" alone (Cohere's template has both) are not Llama 3's wording.
  EXPECT_EQ(tool_syntax_of(R"({{ tool.name }}: {"name": ..., "parameters": {...}})"), ToolSyntax::Hermes);
}

}  // namespace
}  // namespace gufo::server
