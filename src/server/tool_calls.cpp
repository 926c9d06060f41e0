// Tool-call parsing (see tool_calls.h).
#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "server/random_id.h"

namespace gufo::server {

namespace {

constexpr std::string_view kOpen = kToolCallOpen;
constexpr std::string_view kClose = kToolCallClose;

std::string trim(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const size_t last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

// A call's arguments as OpenAI carries them: a JSON object's text (a string is taken as that
// text already), "{}" when there are none.
std::string arguments_text(const nlohmann::ordered_json& call, const char* key) {
  if (!call.contains(key)) return "{}";
  const nlohmann::ordered_json& arguments = call[key];
  return arguments.is_string() ? arguments.get<std::string>()
                               : arguments.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

bool is_callable(const nlohmann::ordered_json& name, std::span<const std::string> callable) {
  return name.is_string() && std::find(callable.begin(), callable.end(), name.get<std::string>()) != callable.end();
}

constexpr std::string_view kPythonTag = "<|python_tag|>";

// Where the text before `at` ends once blanks and a <|python_tag|> just before `at` are left
// out (Llama 3 may write the tag before a call).
size_t before_python_tag(std::string_view text, size_t at) {
  const size_t last = text.substr(0, at).find_last_not_of(" \t\r\n");
  if (last == std::string_view::npos) return at;
  const size_t end = last + 1;
  return end >= kPythonTag.size() && text.substr(end - kPythonTag.size(), kPythonTag.size()) == kPythonTag
             ? end - kPythonTag.size()
             : at;
}

// Llama 3: the answer from its call opening on (after any text, and <|python_tag|> if the
// model wrote it) is one JSON object with a callable "name" and "parameters" (or "arguments").
ParsedAnswer parse_llama3_call(std::string_view text, std::span<const std::string> callable) {
  ParsedAnswer out;
  const size_t open = text.find(kLlama3CallOpen);
  if (open != std::string_view::npos) {
    const nlohmann::ordered_json call =
        nlohmann::ordered_json::parse(text.substr(open), nullptr, /*allow_exceptions=*/false);
    const char* key = call.is_object() && call.contains("parameters") ? "parameters" : "arguments";
    if (call.is_object() && call.contains("name") && is_callable(call["name"], callable) &&
        (!call.contains(key) || call[key].is_object() || call[key].is_string())) {
      out.content = trim(text.substr(0, before_python_tag(text, open)));
      out.tool_calls.push_back({random_id("call_"), call["name"].get<std::string>(), arguments_text(call, key)});
      return out;
    }
  }
  out.content = std::string(text);
  return out;
}

}  // namespace

ToolSyntax tool_syntax_of(std::string_view template_source) {
  // NOTE(tools): Llama 3.1, 3.2 and 3.3's templates all spell the format out in these words;
  // a template that merely mentions "name" and "parameters" (Cohere's, say) is no Llama 3.
  constexpr std::string_view kLlama3Format = "{\"name\": function name, \"parameters\": dictionary of argument name";
  const bool hermes = template_source.find(kToolCallOpen) != std::string_view::npos;
  const bool llama3 = template_source.find(kLlama3Format) != std::string_view::npos;
  return llama3 && !hermes ? ToolSyntax::Llama3 : ToolSyntax::Hermes;
}

std::string_view tool_call_open(ToolSyntax syntax) {
  return syntax == ToolSyntax::Llama3 ? kLlama3CallOpen : kToolCallOpen;
}

ParsedAnswer parse_tool_calls(std::string_view text, std::span<const std::string> callable, ToolSyntax syntax) {
  if (syntax == ToolSyntax::Llama3) return parse_llama3_call(text, callable);
  ParsedAnswer out;
  std::string content;
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find(kOpen, at);
    if (open == std::string_view::npos) break;
    const size_t body = open + kOpen.size();
    const size_t close = text.find(kClose, body);
    // An unterminated block (cut by max_tokens) is parsed up to the end.
    const std::string_view json_text =
        text.substr(body, close == std::string_view::npos ? std::string_view::npos : close - body);
    // ordered_json: the arguments go back with their members in the order the model wrote them.
    const nlohmann::ordered_json call = nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    const size_t end = close == std::string_view::npos ? text.size() : close + kClose.size();
    if (call.is_object() && call.contains("name") && is_callable(call["name"], callable) &&
        (!call.contains("arguments") || call["arguments"].is_object() || call["arguments"].is_string())) {
      content += text.substr(at, open - at);
      out.tool_calls.push_back(
          {random_id("call_"), call["name"].get<std::string>(), arguments_text(call, "arguments")});
    } else {
      content += text.substr(at, end - at);
    }
    at = end;
  }
  if (at < text.size()) content += text.substr(at);
  out.content = out.tool_calls.empty() ? std::string(text) : trim(content);
  return out;
}

namespace {

// All of `text` up to `opening`, or up to a tail that could still become it.
size_t before_opening(std::string_view text, std::string_view opening) {
  const size_t open = text.find(opening);
  if (open != std::string_view::npos) return open;
  for (size_t len = std::min(opening.size() - 1, text.size()); len > 0; --len) {
    if (text.substr(text.size() - len) == opening.substr(0, len)) return text.size() - len;
  }
  return text.size();
}

}  // namespace

size_t content_before_tool_call(std::string_view text, ToolSyntax syntax) {
  if (syntax == ToolSyntax::Hermes) return before_opening(text, kToolCallOpen);
  // Llama 3: a <|python_tag|> is held back too: before a call it belongs to the call.
  return std::min(before_opening(text, kLlama3CallOpen), before_opening(text, kPythonTag));
}

std::string_view tool_calls_text(std::string_view held, ToolSyntax syntax) {
  if (syntax != ToolSyntax::Llama3) return held;
  const size_t first = held.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || held.substr(first, kPythonTag.size()) != kPythonTag) return held;
  return held.substr(first + kPythonTag.size());
}

}  // namespace gufo::server
