// Tool calls in the two syntaxes chat templates teach, chosen by the model's template
// (tool_syntax_of):
//  - Hermes (Qwen's): <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>,
//    several in one answer, text around them;
//  - Llama 3 (Llama 3.1's "JSON for a function call"): {"name": "get_weather", "parameters":
//    {"city": "Paris"}}, one call, which is the whole answer (after any text, which stays
//    content), optionally after <|python_tag|>.
// OpenAI clients expect message.tool_calls with the arguments as a JSON string. Used for chat
// completions that offered `tools`; text outside the calls stays the content. A call whose
// JSON does not parse, lacks a name, or names a tool the request did not make callable (not
// offered, or excluded by tool_choice) is left in the content as it was: a tool call is
// never invented.
// Tested by tests/unit/server/tool_calls_test.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gufo::server {

// How a Hermes call opens and closes (the template's and the tool grammar's syntax too).
inline constexpr std::string_view kToolCallOpen = "<tool_call>";
inline constexpr std::string_view kToolCallClose = "</tool_call>";
// How a Llama 3 call opens, as its template spells the format out to the model.
inline constexpr std::string_view kLlama3CallOpen = "{\"name\": ";

enum class ToolSyntax : uint8_t { Hermes, Llama3 };

// The syntax a chat template teaches: Llama 3's when it asks for {"name": ..., "parameters":
// ...} and has no <tool_call>, else Hermes (also for templates that say nothing of tools).
ToolSyntax tool_syntax_of(std::string_view template_source);
// The text that starts a call in `syntax` (what streaming holds back, and the lazy grammar's
// trigger).
std::string_view tool_call_open(ToolSyntax syntax);

struct ToolCall {
  std::string id;  // call_<random>
  std::string name;
  std::string arguments;  // JSON text of an object
};

struct ParsedAnswer {
  std::string content;  // the text outside the calls' blocks, trimmed; with no calls, the text as it was
  std::vector<ToolCall> tool_calls;
};

ParsedAnswer parse_tool_calls(std::string_view text, std::span<const std::string> callable,
                              ToolSyntax syntax = ToolSyntax::Hermes);

// While streaming: how many leading bytes of `text` can go out as content now, that is, all
// of it up to the first call opening (tool_call_open; for Llama 3 also a <|python_tag|>), or
// up to a tail that could still become one.
size_t content_before_tool_call(std::string_view text, ToolSyntax syntax = ToolSyntax::Hermes);

// The held text (from the first call opening on) as the calls grammar reads it: for Llama 3
// without a leading <|python_tag|>, which the model may write before its call.
std::string_view tool_calls_text(std::string_view held, ToolSyntax syntax);

}  // namespace gufo::server
