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

}  // namespace

ParsedAnswer parse_tool_calls(std::string_view text, std::span<const std::string> callable) {
  const auto is_callable = [&](const nlohmann::ordered_json& name) {
    return name.is_string() && std::find(callable.begin(), callable.end(), name.get<std::string>()) != callable.end();
  };
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
    if (call.is_object() && call.contains("name") && is_callable(call["name"]) &&
        (!call.contains("arguments") || call["arguments"].is_object() || call["arguments"].is_string())) {
      content += text.substr(at, open - at);
      std::string arguments = "{}";
      if (call.contains("arguments")) {
        arguments = call["arguments"].is_string() ? call["arguments"].get<std::string>()
                                                  : call["arguments"].dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      }
      out.tool_calls.push_back({random_id("call_"), call["name"].get<std::string>(), std::move(arguments)});
    } else {
      content += text.substr(at, end - at);
    }
    at = end;
  }
  if (at < text.size()) content += text.substr(at);
  out.content = out.tool_calls.empty() ? std::string(text) : trim(content);
  return out;
}

size_t content_before_tool_call(std::string_view text) {
  const size_t open = text.find(kOpen);
  if (open != std::string_view::npos) return open;
  for (size_t len = std::min(kOpen.size() - 1, text.size()); len > 0; --len) {
    if (text.substr(text.size() - len) == kOpen.substr(0, len)) return text.size() - len;
  }
  return text.size();
}

}  // namespace gufo::server
