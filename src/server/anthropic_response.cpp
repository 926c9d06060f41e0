// Anthropic response shapes (see anthropic_response.h).
#include "server/anthropic_response.h"

#include "server/json_text.h"
#include "server/random_id.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

std::string event(const char* name, const ordered_json& data) {
  return std::string("event: ") + name + "\ndata: " + dump(data) + "\n\n";
}

// A parsed call's arguments as the tool_use block's input (an object), or null.
ordered_json tool_input(const ToolCall& call) {
  ordered_json input = ordered_json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  return input.is_object() ? input : ordered_json();
}

// tool_use ids look like toolu_<random>; the parser's call_<random> keeps its random part.
std::string tool_use_id(const ToolCall& call) {
  return "toolu_" + (call.id.starts_with("call_") ? call.id.substr(5) : call.id);
}

// Calls that can be tool_use blocks; the others' text joins the content.
std::vector<const ToolCall*> usable_calls(const AnswerParts& answer, std::string& text) {
  std::vector<const ToolCall*> calls;
  for (const ToolCall& call : answer.tool_calls) {
    if (tool_input(call).is_object()) {
      calls.push_back(&call);
    } else {
      text += (text.empty() ? "" : "\n") + std::string("<tool_call>\n{\"name\": ") + ordered_json(call.name).dump() +
              ", \"arguments\": " + call.arguments + "}\n</tool_call>";
    }
  }
  return calls;
}

// Only a stop at a stop sequence names one (a tool call may end right at one, too).
ordered_json stop_sequence_json(const std::string& stop_reason, const std::string& stop_sequence) {
  return stop_reason == "stop_sequence" && !stop_sequence.empty() ? ordered_json(stop_sequence) : ordered_json();
}

}  // namespace

ordered_json anthropic_error_body(const ApiError& error) {
  const char* type = "api_error";
  switch (error.status) {
    case 400:
      type = "invalid_request_error";
      break;
    case 401:
      type = "authentication_error";
      break;
    case 403:
      type = "permission_error";
      break;
    case 404:
      type = "not_found_error";
      break;
    case 413:
      type = "request_too_large";
      break;
    case 429:
      type = "rate_limit_error";
      break;
    case 503:
      type = "overloaded_error";
      break;
    default:
      break;
  }
  return {{"type", "error"}, {"error", {{"type", type}, {"message", error.message}}}};
}

std::string anthropic_stop_reason(engine::StopReason reason, const AnswerParts& answer) {
  std::string unused;
  if (!usable_calls(answer, unused).empty()) return "tool_use";
  switch (reason) {
    case engine::StopReason::Length:
    case engine::StopReason::ContextFull:
      return "max_tokens";
    case engine::StopReason::StopString:
      return "stop_sequence";
    case engine::StopReason::EndOfGeneration:
    case engine::StopReason::Cancelled:
      break;
  }
  return "end_turn";
}

std::string new_message_id() { return random_id("msg_"); }

ordered_json content_blocks(const AnswerParts& answer) {
  ordered_json blocks = ordered_json::array();
  if (!answer.reasoning.empty()) {
    blocks.push_back({{"type", "thinking"}, {"thinking", answer.reasoning}, {"signature", ""}});
  }
  std::string text = answer.content;
  const std::vector<const ToolCall*> calls = usable_calls(answer, text);
  if (!text.empty()) blocks.push_back({{"type", "text"}, {"text", text}});
  for (const ToolCall* call : calls) {
    blocks.push_back(
        {{"type", "tool_use"}, {"id", tool_use_id(*call)}, {"name", call->name}, {"input", tool_input(*call)}});
  }
  return blocks;
}

ordered_json message_json(const std::string& id, const std::string& model, const AnswerParts& answer,
                          const std::string& stop_reason, const std::string& stop_sequence,
                          const AnthropicUsage& usage) {
  return {{"id", id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model},
          {"content", content_blocks(answer)},
          {"stop_reason", stop_reason},
          {"stop_sequence", stop_sequence_json(stop_reason, stop_sequence)},
          {"usage",
           {{"input_tokens", usage.input_tokens},
            {"output_tokens", usage.output_tokens},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", usage.cache_read_input_tokens}}}};
}

std::string AnthropicEventStream::start(int64_t input_tokens, int64_t cache_read_input_tokens) {
  const ordered_json message{{"id", id_},
                             {"type", "message"},
                             {"role", "assistant"},
                             {"model", model_},
                             {"content", ordered_json::array()},
                             {"stop_reason", nullptr},
                             {"stop_sequence", nullptr},
                             {"usage",
                              {{"input_tokens", input_tokens},
                               {"output_tokens", 0},
                               {"cache_creation_input_tokens", 0},
                               {"cache_read_input_tokens", cache_read_input_tokens}}}};
  return event("message_start", {{"type", "message_start"}, {"message", message}});
}

std::string AnthropicEventStream::ping() { return event("ping", {{"type", "ping"}}); }

std::string AnthropicEventStream::close() {
  if (open_ == Block::None) return "";
  open_ = Block::None;
  return event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
}

std::string AnthropicEventStream::open(Block block) {
  if (open_ == block) return "";
  std::string out = close();
  open_ = block;
  ++index_;
  const ordered_json start = block == Block::Thinking
                                 ? ordered_json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                 : ordered_json{{"type", "text"}, {"text", ""}};
  return out +
         event("content_block_start", {{"type", "content_block_start"}, {"index", index_}, {"content_block", start}});
}

std::string AnthropicEventStream::feed(const AnswerParts& parts) {
  std::string out;
  if (!parts.reasoning.empty()) {
    out += open(Block::Thinking);
    out += event("content_block_delta", {{"type", "content_block_delta"},
                                         {"index", index_},
                                         {"delta", {{"type", "thinking_delta"}, {"thinking", parts.reasoning}}}});
  }
  if (!parts.content.empty()) {
    out += open(Block::Text);
    out += event("content_block_delta", {{"type", "content_block_delta"},
                                         {"index", index_},
                                         {"delta", {{"type", "text_delta"}, {"text", parts.content}}}});
  }
  for (const ToolCallDelta& delta : parts.call_deltas) out += feed_call(delta);
  return out;
}

std::string AnthropicEventStream::feed_call(const ToolCallDelta& delta) {
  std::string out;
  if (!delta.id.empty()) {
    out += close();
    open_ = Block::ToolUse;
    ++index_;
    const ToolCall call{.id = delta.id, .name = delta.name, .arguments = ""};
    out += event(
        "content_block_start",
        {{"type", "content_block_start"},
         {"index", index_},
         {"content_block",
          {{"type", "tool_use"}, {"id", tool_use_id(call)}, {"name", call.name}, {"input", ordered_json::object()}}}});
  }
  if (open_ != Block::ToolUse || delta.arguments.empty()) return out;
  return out +
         event("content_block_delta", {{"type", "content_block_delta"},
                                       {"index", index_},
                                       {"delta", {{"type", "input_json_delta"}, {"partial_json", delta.arguments}}}});
}

std::string AnthropicEventStream::finish(const AnswerParts& rest, const std::string& stop_reason,
                                         const std::string& stop_sequence, const AnthropicUsage& usage) {
  AnswerParts text_part{.reasoning = rest.reasoning, .content = rest.content, .tool_calls = {}, .call_deltas = {}};
  const std::vector<const ToolCall*> calls = usable_calls(rest, text_part.content);
  // The streamed calls' last pieces come before any text the calls grammar refused after them.
  std::string out = feed({.reasoning = "", .content = "", .tool_calls = {}, .call_deltas = rest.call_deltas});
  out += feed(text_part);
  out += close();                       // after feed: it may open the block it closes
  for (const ToolCall* call : calls) {  // whole calls: a block each, its input in one piece
    out += feed_call({.index = 0, .id = call->id, .name = call->name, .arguments = tool_input(*call).dump()});
    out += close();
  }
  out += event(
      "message_delta",
      {{"type", "message_delta"},
       {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence_json(stop_reason, stop_sequence)}}},
       // The whole usage: clients take input and cache counts from here too.
       {"usage",
        {{"input_tokens", usage.input_tokens},
         {"output_tokens", usage.output_tokens},
         {"cache_creation_input_tokens", 0},
         {"cache_read_input_tokens", usage.cache_read_input_tokens}}}});
  out += event("message_stop", {{"type", "message_stop"}});
  return out;
}

}  // namespace gufo::server
