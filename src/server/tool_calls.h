// Tool calls in Qwen's (Hermes) format: the model writes
//   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// and OpenAI clients expect message.tool_calls with the arguments as a JSON string. Used for
// chat completions that offered `tools`; text outside the blocks stays the content. A block
// whose JSON does not parse, lacks a name, or names a tool the request did not make callable
// (not offered, or excluded by tool_choice) is left in the content as it was: a tool call is
// never invented.
// Tested by tests/unit/server/tool_calls_test.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gufo::server {

// How a call opens and closes (the template's and the tool grammar's syntax too).
inline constexpr std::string_view kToolCallOpen = "<tool_call>";
inline constexpr std::string_view kToolCallClose = "</tool_call>";

struct ToolCall {
  std::string id;         // call_<random>
  std::string name;
  std::string arguments;  // JSON text of an object
};

struct ParsedAnswer {
  std::string content;  // the text outside the calls' blocks, trimmed; with no calls, the text as it was
  std::vector<ToolCall> tool_calls;
};

ParsedAnswer parse_tool_calls(std::string_view text, std::span<const std::string> callable);

// While streaming: how many leading bytes of `text` can go out as content now, that is, all
// of it up to the first "<tool_call>" (or up to a tail that could still become one).
size_t content_before_tool_call(std::string_view text);

}  // namespace gufo::server
