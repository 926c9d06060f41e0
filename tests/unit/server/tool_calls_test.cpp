// Qwen/Hermes tool calls out of generated text: one or several blocks, text around them,
// arguments as an object (members in the model's order) or a string, malformed blocks left
// as text, a block cut short by max_tokens, and how much of a stream can go out before a
// block starts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/tool_calls.h"

namespace gufo::server {
namespace {

const std::vector<std::string> kOffered = {"get_weather", "get_time", "now", "f"};

TEST(ToolCalls, ParsesBlocksAndKeepsTheTextAround) {
  const ParsedAnswer a = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"UTC\\\"}\"}\n</tool_call>", kOffered);
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
      "\"options\": {\"recursive\": true, \"max_results\": 2}}}\n</tool_call>", kOffered);
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

}  // namespace
}  // namespace gufo::server
