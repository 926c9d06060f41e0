// Tool calls as they stream (see tool_call_stream.h).
#include "server/tool_call_stream.h"

#include <nlohmann/json.hpp>

#include "server/random_id.h"

namespace gufo::server {

namespace {

constexpr std::string_view kBlanks = " \t\r\n";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_blank(char c) { return kBlanks.find(c) != std::string_view::npos; }

// What a call's text is before its name, and between its name and its arguments.
std::string_view name_opening(ToolSyntax syntax) {
  return syntax == ToolSyntax::Llama3 ? "{\"name\": " : "<tool_call>\n{\"name\": ";
}
std::string_view arguments_key(ToolSyntax syntax) {
  return syntax == ToolSyntax::Llama3 ? ", \"parameters\": " : ", \"arguments\": ";
}
std::string_view call_closing(ToolSyntax syntax) { return syntax == ToolSyntax::Llama3 ? "}" : "}\n</tool_call>"; }

using Match = ToolCallStream::Match;

// Whether `read` is `literal` or the start of it.
Match match(std::string_view read, std::string_view literal) {
  if (read.size() > literal.size() || literal.substr(0, read.size()) != read) return Match::No;
  return read.size() == literal.size() ? Match::Whole : Match::Prefix;
}

// Where the JSON string literal at the start of `text` ends (past its closing quote), or
// npos while it is not closed yet.
size_t string_end(std::string_view text) {
  for (size_t i = 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::vector<ToolCallDelta> ToolCallStream::feed(std::string_view text) {
  std::vector<ToolCallDelta> out;
  size_t at = 0;
  bool more = true;
  while (more && at < text.size()) {
    switch (state_) {
      case State::Opening:
        more = opening(text, at);
        break;
      case State::Head:
        more = head(text, at);
        break;
      case State::Arguments:
        more = arguments(text, at, out);
        break;
      case State::Closing:
        more = closing(text, at);
        break;
      case State::Broken:
        more = false;
        break;
    }
  }
  return out;
}

ToolCallStream::Match ToolCallStream::read_literal(std::string_view text, size_t& at, std::string_view literal) {
  while (at < text.size()) {
    pending_ += text[at++];
    const Match m = match(pending_, literal);
    if (m != Match::Prefix) return m;
  }
  return Match::Prefix;
}

bool ToolCallStream::after_literal(Match read, State next) {
  if (read == Match::No) state_ = State::Broken;
  if (read != Match::Whole) return false;
  pending_.clear();
  state_ = next;
  return true;
}

bool ToolCallStream::opening(std::string_view text, size_t& at) {
  while (pending_.empty() && at < text.size() && is_blank(text[at])) ++at;
  if (at == text.size()) return false;
  // Llama 3 may write <|python_tag|> before its call (and blanks after it).
  if (syntax_ == ToolSyntax::Llama3 && (pending_.empty() ? text[at] : pending_[0]) == '<') {
    return after_literal(read_literal(text, at, kPythonTag), State::Opening);
  }
  return after_literal(read_literal(text, at, name_opening(syntax_)), State::Head);
}

bool ToolCallStream::head(std::string_view text, size_t& at) {
  for (; at < text.size(); ++at) {
    pending_ += text[at];
    if (pending_[0] != '"') break;
    const size_t name_end = string_end(pending_);
    if (name_end == std::string_view::npos) continue;
    const Match m = match(std::string_view(pending_).substr(name_end), arguments_key(syntax_));
    if (m == Match::No) break;
    if (m == Match::Prefix) continue;
    const nlohmann::json name = nlohmann::json::parse(pending_.substr(0, name_end), nullptr, false);
    if (!name.is_string()) break;
    name_ = name.get<std::string>();
    pending_.clear();
    depth_ = 0;
    in_string_ = escaped_ = false;
    state_ = State::Arguments;
    ++at;
    return true;
  }
  if (at < text.size()) state_ = State::Broken;  // the loop broke off: not a call's head
  return false;
}

bool ToolCallStream::arguments(std::string_view text, size_t& at, std::vector<ToolCallDelta>& out) {
  std::string piece;
  for (; at < text.size() && state_ == State::Arguments; ++at) {
    const char c = text[at];
    if (in_string_) {
      piece += c;
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (is_blank(c)) continue;
    if (depth_ == 0) {
      if (c != '{') {  // arguments are an object
        state_ = State::Broken;
        break;
      }
      // The call is announced with its arguments' first byte, where it is a call for sure.
      out.push_back({.index = calls_++, .id = random_id("call_"), .name = std::move(name_), .arguments = ""});
    }
    piece += c;
    if (c == '"') in_string_ = true;
    if (c == '{' || c == '[') ++depth_;
    if ((c == '}' || c == ']') && --depth_ == 0) state_ = State::Closing;
  }
  if (!piece.empty()) {
    if (out.empty() || out.back().index != calls_ - 1)
      out.push_back({.index = calls_ - 1, .id = "", .name = "", .arguments = ""});
    out.back().arguments += piece;
  }
  return state_ != State::Broken;
}

bool ToolCallStream::closing(std::string_view text, size_t& at) {
  return after_literal(read_literal(text, at, call_closing(syntax_)), State::Opening);
}

void append_delta(std::vector<ToolCall>& calls, const ToolCallDelta& delta) {
  if (!delta.id.empty()) calls.push_back({delta.id, delta.name, ""});
  if (!calls.empty()) calls.back().arguments += delta.arguments;
}

std::optional<std::vector<ToolCall>> calls_as_streamed(std::string_view text, ToolSyntax syntax) {
  ToolCallStream stream(syntax);
  std::vector<ToolCall> calls;
  for (const ToolCallDelta& delta : stream.feed(text)) append_delta(calls, delta);
  if (stream.broken() || !stream.between_calls() || calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace gufo::server
