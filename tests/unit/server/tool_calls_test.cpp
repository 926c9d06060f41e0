// Qwen/Hermes tool calls out of generated text: one or several blocks, text around them,
// arguments as an object or a string, malformed blocks left as text, a block cut short by
// max_tokens, and how much of a stream can go out before a block starts.
#include <gtest/gtest.h>

#include "server/tool_calls.h"

namespace gufo::server {
namespace {

TEST(ToolCalls, ParsesBlocksAndKeepsTheTextAround) {
  const ParsedAnswer a = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"UTC\\\"}\"}\n</tool_call>");
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.content, "Let me check.");
  EXPECT_EQ(a.tool_calls[0].name, "get_weather");
  EXPECT_EQ(a.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(a.tool_calls[1].arguments, "{\"tz\": \"UTC\"}");
  EXPECT_EQ(a.tool_calls[0].id.rfind("call_", 0), 0u);
  EXPECT_NE(a.tool_calls[0].id, a.tool_calls[1].id);
}

TEST(ToolCalls, NoArgumentsMeansAnEmptyObject) {
  const ParsedAnswer a = parse_tool_calls("<tool_call>{\"name\": \"now\"}</tool_call>");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].arguments, "{}");
  EXPECT_EQ(a.content, "");
}

TEST(ToolCalls, MalformedBlocksStayText) {
  const std::string text = "x <tool_call>{\"name\": 5}</tool_call> y <tool_call>not json</tool_call>";
  const ParsedAnswer a = parse_tool_calls(text);
  EXPECT_TRUE(a.tool_calls.empty());
  EXPECT_EQ(a.content, text);
  EXPECT_EQ(parse_tool_calls("plain answer").content, "plain answer");
}

TEST(ToolCalls, ABlockCutShortStillParsesIfItsJsonIsWhole) {
  const ParsedAnswer a = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_TRUE(parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"argu").tool_calls.empty());
}

TEST(ToolCalls, StreamsTextUpToABlock) {
  EXPECT_EQ(content_before_tool_call("hello"), 5u);
  EXPECT_EQ(content_before_tool_call("hello <tool_call>{"), 6u);
  EXPECT_EQ(content_before_tool_call("hello <tool_"), 6u);  // could still become a block
  EXPECT_EQ(content_before_tool_call("a < b"), 5u);
}

}  // namespace
}  // namespace gufo::server
