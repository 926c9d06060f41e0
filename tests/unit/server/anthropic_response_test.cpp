// Anthropic's response shapes: error types by status, stop reasons, content blocks (a call
// whose arguments are not an object stays text), and the event stream's block order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/anthropic_response.h"

namespace gufo::server {
namespace {

using nlohmann::ordered_json;

// The "data:" objects of an SSE text, in order.
std::vector<ordered_json> events_of(const std::string& sse) {
  std::vector<ordered_json> out;
  size_t at = 0;
  while ((at = sse.find("data: ", at)) != std::string::npos) {
    const size_t end = sse.find('\n', at);
    out.push_back(ordered_json::parse(sse.substr(at + 6, end - at - 6)));
    at = end;
  }
  return out;
}

TEST(AnthropicResponse, ErrorBodiesUseAnthropicsTypes) {
  const auto type_of = [](int status) {
    ApiError error = bad_request("m");
    error.status = status;
    return anthropic_error_body(error)["error"]["type"].get<std::string>();
  };
  EXPECT_EQ(type_of(400), "invalid_request_error");
  EXPECT_EQ(type_of(401), "authentication_error");
  EXPECT_EQ(type_of(404), "not_found_error");
  EXPECT_EQ(type_of(413), "request_too_large");
  EXPECT_EQ(type_of(429), "rate_limit_error");
  EXPECT_EQ(type_of(500), "api_error");
  EXPECT_EQ(type_of(503), "overloaded_error");
  EXPECT_EQ(anthropic_error_body(bad_request("bad")),
            ordered_json::parse(R"({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})"));
}

TEST(AnthropicResponse, StopReasonsAndBlocks) {
  const AnswerParts plain{.reasoning = "", .content = "hi", .tool_calls = {}, .call_deltas = {}};
  EXPECT_EQ(anthropic_stop_reason(engine::StopReason::EndOfGeneration, plain), "end_turn");
  EXPECT_EQ(anthropic_stop_reason(engine::StopReason::Length, plain), "max_tokens");
  EXPECT_EQ(anthropic_stop_reason(engine::StopReason::ContextFull, plain), "max_tokens");
  EXPECT_EQ(anthropic_stop_reason(engine::StopReason::StopString, plain), "stop_sequence");

  const AnswerParts calling{
      .reasoning = "hmm",
      .content = "Sure.",
      .tool_calls = {{"call_abc", "get_weather", R"({"city":"Oslo"})"}, {"call_def", "get_time", R"("not an object")"}},
      .call_deltas = {}};
  EXPECT_EQ(anthropic_stop_reason(engine::StopReason::EndOfGeneration, calling), "tool_use");
  const ordered_json blocks = content_blocks(calling);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0], ordered_json::parse(R"({"type": "thinking", "thinking": "hmm", "signature": ""})"));
  EXPECT_EQ(blocks[1]["type"], "text");
  EXPECT_EQ(blocks[1]["text"].get<std::string>().rfind("Sure.\n<tool_call>", 0), 0u);  // the bad call stays text
  EXPECT_EQ(blocks[2],
            ordered_json::parse(
                R"({"type": "tool_use", "id": "toolu_abc", "name": "get_weather", "input": {"city": "Oslo"}})"));
  const AnswerParts only_bad{.reasoning = "", .content = "", .tool_calls = {{"call_x", "f", "[1]"}}, .call_deltas = {}};
  EXPECT_EQ(anthropic_stop_reason(engine::StopReason::EndOfGeneration, only_bad), "end_turn");

  const ordered_json message =
      message_json("msg_1", "m", plain, "end_turn", "", {.input_tokens = 5, .output_tokens = 2});
  EXPECT_EQ(message["stop_sequence"], nullptr);
  EXPECT_EQ(message["usage"]["input_tokens"], 5);
  EXPECT_EQ(message["content"], ordered_json::parse(R"([{"type": "text", "text": "hi"}])"));
}

TEST(AnthropicResponse, TheEventStreamOpensAndClosesBlocksInOrder) {
  AnthropicEventStream stream("msg_1", "m");
  std::string sse = stream.start(7, 3);
  sse += stream.feed({.reasoning = "think", .content = "", .tool_calls = {}, .call_deltas = {}});
  sse += stream.feed({.reasoning = " more", .content = "", .tool_calls = {}, .call_deltas = {}});
  sse += stream.feed({.reasoning = "", .content = "Hello", .tool_calls = {}, .call_deltas = {}});
  sse +=
      stream.finish({.reasoning = "", .content = "!", .tool_calls = {{"call_q", "f", R"({"a":1})"}}, .call_deltas = {}},
                    "tool_use", "!", {.input_tokens = 7, .output_tokens = 9, .cache_read_input_tokens = 3});
  std::vector<std::string> kinds;
  for (const ordered_json& e : events_of(sse)) {
    std::string kind = e["type"];
    if (e.contains("delta") && e["delta"].contains("type")) kind += ":" + e["delta"]["type"].get<std::string>();
    if (e.contains("index")) kind += "@" + std::to_string(e["index"].get<int>());
    kinds.push_back(kind);
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{
                       "message_start", "content_block_start@0", "content_block_delta:thinking_delta@0",
                       "content_block_delta:thinking_delta@0", "content_block_stop@0", "content_block_start@1",
                       "content_block_delta:text_delta@1", "content_block_delta:text_delta@1", "content_block_stop@1",
                       "content_block_start@2", "content_block_delta:input_json_delta@2", "content_block_stop@2",
                       "message_delta", "message_stop"}));
  const std::vector<ordered_json> events = events_of(sse);
  EXPECT_EQ(events[0]["message"]["usage"]["input_tokens"], 7);
  EXPECT_EQ(events[0]["message"]["usage"]["cache_read_input_tokens"], 3);
  EXPECT_EQ(events[10]["delta"]["partial_json"], R"({"a":1})");
  EXPECT_EQ(events[12]["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(events[12]["usage"]["output_tokens"], 9);
  EXPECT_EQ(events[12]["usage"]["cache_read_input_tokens"], 3);
  EXPECT_EQ(events[12]["delta"]["stop_sequence"], nullptr);  // a tool call names no stop sequence
  EXPECT_EQ(sse.rfind("event: message_stop\n", std::string::npos) != std::string::npos, true);
}

// Streamed calls (AnswerSplitter's call deltas): a tool_use block opens with a call's first
// delta and its input comes as input_json_delta pieces that join to the arguments.
TEST(AnthropicResponse, AStreamedCallIsAToolUseBlockWhoseInputComesInPieces) {
  AnthropicEventStream stream("msg_2", "m");
  std::string sse = stream.start(7, 0);
  sse += stream.feed({.reasoning = "",
                      .content = "",
                      .tool_calls = {},
                      .call_deltas = {{.index = 0, .id = "call_q", .name = "get_weather", .arguments = "{\"city\":"}}});
  sse += stream.feed({.reasoning = "",
                      .content = "",
                      .tool_calls = {},
                      .call_deltas = {{.index = 0, .id = "", .name = "", .arguments = "\"Oslo\"}"}}});
  sse += stream.finish({.reasoning = "", .content = "", .tool_calls = {}, .call_deltas = {}}, "tool_use", "",
                       {.input_tokens = 7, .output_tokens = 9, .cache_read_input_tokens = 0});
  std::vector<std::string> kinds;
  std::string input;
  for (const ordered_json& e : events_of(sse)) {
    std::string kind = e["type"];
    if (e.contains("delta") && e["delta"].contains("type")) kind += ":" + e["delta"]["type"].get<std::string>();
    if (e.contains("delta") && e["delta"].contains("partial_json")) input += e["delta"]["partial_json"];
    if (e["type"] == "content_block_start") {
      EXPECT_EQ(e["content_block"]["id"], "toolu_q");
      EXPECT_EQ(e["content_block"]["name"], "get_weather");
    }
    kinds.push_back(kind);
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{
                       "message_start", "content_block_start", "content_block_delta:input_json_delta",
                       "content_block_delta:input_json_delta", "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(input, R"({"city":"Oslo"})");
}

}  // namespace
}  // namespace gufo::server
