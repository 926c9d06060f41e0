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

// Llama 3: the answer from its first "{" on (after any text, and <|python_tag|> if the model
// wrote it) is one JSON object with a callable "name" and "parameters" (or "arguments").
ParsedAnswer parse_llama3_call(std::string_view text, std::span<const std::string> callable) {
  constexpr std::string_view kPythonTag = "<|python_tag|>";
  ParsedAnswer out;
  const size_t open = text.find('{');
  if (open != std::string_view::npos) {
    const nlohmann::ordered_json call =
        nlohmann::ordered_json::parse(text.substr(open), nullptr, /*allow_exceptions=*/false);
    const char* key = call.is_object() && call.contains("parameters") ? "parameters" : "arguments";
    if (call.is_object() && call.contains("name") && is_callable(call["name"], callable) &&
        (!call.contains(key) || call[key].is_object() || call[key].is_string())) {
      std::string_view before = text.substr(0, open);
      const size_t tag = before.rfind(kPythonTag);
      if (tag != std::string_view::npos && trim(before.substr(tag + kPythonTag.size())).empty()) before = before.substr(0, tag);
      out.content = trim(before);
      out.tool_calls.push_back({random_id("call_"), call["name"].get<std::string>(), arguments_text(call, key)});
      return out;
    }
  }
  out.content = std::string(text);
  return out;
}

}  // namespace

ToolSyntax tool_syntax_of(std::string_view template_source) {
  const bool hermes = template_source.find(kToolCallOpen) != std::string_view::npos;
  const bool llama3 = template_source.find("\"parameters\"") != std::string_view::npos &&
                      template_source.find("\"name\"") != std::string_view::npos;
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
    const std::string_view json_text = text.substr(body, close == std::string_view::npos ? std::string_view::npos : close - body);
    // ordered_json: the arguments go back with their members in the order the model wrote them.
    const nlohmann::ordered_json call = nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    const size_t end = close == std::string_view::npos ? text.size() : close + kClose.size();
    if (call.is_object() && call.contains("name") && is_callable(call["name"], callable) &&
        (!call.contains("arguments") || call["arguments"].is_object() || call["arguments"].is_string())) {
      content += text.substr(at, open - at);
      out.tool_calls.push_back({random_id("call_"), call["name"].get<std::string>(), arguments_text(call, "arguments")});
    } else {
      content += text.substr(at, end - at);
    }
    at = end;
  }
  if (at < text.size()) content += text.substr(at);
  out.content = out.tool_calls.empty() ? std::string(text) : trim(content);
  return out;
}

size_t content_before_tool_call(std::string_view text, ToolSyntax syntax) {
  const std::string_view opening = tool_call_open(syntax);
  const size_t open = text.find(opening);
  if (open != std::string_view::npos) return open;
  for (size_t len = std::min(opening.size() - 1, text.size()); len > 0; --len) {
    if (text.substr(text.size() - len) == opening.substr(0, len)) return text.size() - len;
  }
  return text.size();
}

}  // namespace gufo::server
