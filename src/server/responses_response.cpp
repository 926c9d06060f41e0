// Responses API shapes (see responses_response.h).
#include "server/responses_response.h"

#include "server/json_text.h"
#include "server/random_id.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

ordered_json reasoning_item(const std::string& id, const std::string& text) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", ordered_json::array()},
          {"content", ordered_json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

ordered_json text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", ordered_json::array()}};
}

ordered_json message_item(const std::string& id, const std::string& text, const char* status) {
  return {{"type", "message"},
          {"id", id},
          {"status", status},
          {"role", "assistant"},
          {"content", text.empty() && std::string(status) == "in_progress" ? ordered_json::array()
                                                                           : ordered_json::array({text_part(text)})}};
}

ordered_json function_call_item(const ToolCall& call, const std::string& id, const char* status) {
  return {{"type", "function_call"},     {"id", id},        {"call_id", call.id}, {"name", call.name},
          {"arguments", call.arguments}, {"status", status}};
}

}  // namespace

ordered_json output_items(const AnswerParts& answer) {
  ordered_json items = ordered_json::array();
  if (!answer.reasoning.empty()) items.push_back(reasoning_item(random_id("rs_"), answer.reasoning));
  if (!answer.content.empty() || answer.tool_calls.empty()) {
    items.push_back(message_item(random_id("msg_"), answer.content, "completed"));
  }
  for (const ToolCall& call : answer.tool_calls)
    items.push_back(function_call_item(call, random_id("fc_"), "completed"));
  return items;
}

bool response_incomplete(engine::StopReason reason) {
  return reason == engine::StopReason::Length || reason == engine::StopReason::ContextFull;
}

ordered_json response_json(const ResponseMeta& meta, const ordered_json& output, bool incomplete,
                           const ResponseUsage& usage, bool in_progress) {
  const char* status = in_progress ? "in_progress" : incomplete ? "incomplete" : "completed";
  return {{"id", meta.id},
          {"object", "response"},
          {"created_at", meta.created_at},
          {"status", status},
          {"error", nullptr},
          {"incomplete_details",
           incomplete && !in_progress ? ordered_json{{"reason", "max_output_tokens"}} : ordered_json()},
          {"instructions", meta.instructions},
          {"model", meta.model},
          {"output", output},
          {"parallel_tool_calls", true},
          {"previous_response_id",
           meta.previous_response_id.empty() ? ordered_json() : ordered_json(meta.previous_response_id)},
          {"tools", ordered_json::array()},
          {"metadata", ordered_json::object()},
          {"usage",
           {{"input_tokens", usage.input_tokens},
            {"input_tokens_details", {{"cached_tokens", usage.cached_tokens}}},
            {"output_tokens", usage.output_tokens},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", usage.input_tokens + usage.output_tokens}}}};
}

ordered_json assistant_message(const AnswerParts& answer) {
  ordered_json message{{"role", "assistant"}, {"content", answer.content}};
  if (!answer.reasoning.empty()) message["reasoning_content"] = answer.reasoning;
  if (!answer.tool_calls.empty()) {
    ordered_json calls = ordered_json::array();
    for (const ToolCall& call : answer.tool_calls) {
      calls.push_back(
          {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

std::string ResponsesEventStream::event(const std::string& type, ordered_json data) {
  ordered_json body{{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : data.items()) body[key] = std::move(value);
  return "event: " + type + "\ndata: " + dump(body) + "\n\n";
}

std::string ResponsesEventStream::start() {
  const ordered_json empty = ordered_json::array();
  std::string out = event("response.created", {{"response", response_json(meta_, empty, false, {}, true)}});
  out += event("response.in_progress", {{"response", response_json(meta_, empty, false, {}, true)}});  // in order
  return out;
}

std::string ResponsesEventStream::close(const char* call_status) {
  if (open_ == Item::None) return "";
  const int64_t index = static_cast<int64_t>(output_.size());
  std::string out;
  ordered_json item;
  if (open_ == Item::FunctionCall) {
    out +=
        event("response.function_call_arguments.done",
              {{"item_id", item_id_}, {"output_index", index}, {"name", call_.name}, {"arguments", call_.arguments}});
    item = function_call_item(call_, item_id_, call_status);
  } else if (open_ == Item::Reasoning) {
    out += event("response.reasoning_text.done",
                 {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"text", text_}});
    out += event("response.content_part.done", {{"item_id", item_id_},
                                                {"output_index", index},
                                                {"content_index", 0},
                                                {"part", {{"type", "reasoning_text"}, {"text", text_}}}});
    item = reasoning_item(item_id_, text_);
  } else {
    out += event("response.output_text.done",
                 {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"text", text_}});
    out += event("response.content_part.done",
                 {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"part", text_part(text_)}});
    item = message_item(item_id_, text_, "completed");
  }
  out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
  output_.push_back(std::move(item));
  open_ = Item::None;
  text_.clear();
  return out;
}

std::string ResponsesEventStream::open(Item item) {
  if (open_ == item && item != Item::FunctionCall) return "";
  std::string out = close();
  open_ = item;
  const int64_t index = static_cast<int64_t>(output_.size());
  if (item == Item::FunctionCall) {
    item_id_ = random_id("fc_");
    out += event("response.output_item.added",
                 {{"output_index", index}, {"item", function_call_item(call_, item_id_, "in_progress")}});
  } else if (item == Item::Reasoning) {
    item_id_ = random_id("rs_");
    ordered_json added = reasoning_item(item_id_, "");
    added["content"] = ordered_json::array();
    out += event("response.output_item.added", {{"output_index", index}, {"item", added}});
    out += event("response.content_part.added", {{"item_id", item_id_},
                                                 {"output_index", index},
                                                 {"content_index", 0},
                                                 {"part", {{"type", "reasoning_text"}, {"text", ""}}}});
  } else {
    item_id_ = random_id("msg_");
    out += event("response.output_item.added",
                 {{"output_index", index}, {"item", message_item(item_id_, "", "in_progress")}});
    out += event("response.content_part.added",
                 {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"part", text_part("")}});
  }
  return out;
}

std::string ResponsesEventStream::feed(const AnswerParts& parts) {
  std::string out;
  if (!parts.reasoning.empty()) {
    out += open(Item::Reasoning);
    text_ += parts.reasoning;
    out += event("response.reasoning_text.delta", {{"item_id", item_id_},
                                                   {"output_index", static_cast<int64_t>(output_.size())},
                                                   {"content_index", 0},
                                                   {"delta", parts.reasoning}});
  }
  if (!parts.content.empty()) {
    out += open(Item::Message);
    text_ += parts.content;
    out += event("response.output_text.delta", {{"item_id", item_id_},
                                                {"output_index", static_cast<int64_t>(output_.size())},
                                                {"content_index", 0},
                                                {"delta", parts.content}});
  }
  for (const ToolCallDelta& delta : parts.call_deltas) out += feed_call(delta);
  return out;
}

std::string ResponsesEventStream::feed_call(const ToolCallDelta& delta) {
  std::string out;
  if (!delta.id.empty()) {
    out += close();
    call_ = {.id = delta.id, .name = delta.name, .arguments = ""};
    out += open(Item::FunctionCall);
  }
  if (open_ != Item::FunctionCall || delta.arguments.empty()) return out;
  call_.arguments += delta.arguments;
  out += event(
      "response.function_call_arguments.delta",
      {{"item_id", item_id_}, {"output_index", static_cast<int64_t>(output_.size())}, {"delta", delta.arguments}});
  return out;
}

std::string ResponsesEventStream::finish(const AnswerParts& rest, bool incomplete, const ResponseUsage& usage,
                                         bool calls_whole) {
  // The streamed calls' last pieces come before any text the calls grammar refused after them.
  std::string out = feed({.reasoning = "", .content = "", .tool_calls = {}, .call_deltas = rest.call_deltas});
  if (open_ == Item::FunctionCall && !calls_whole) out += close("incomplete");
  out += feed({.reasoning = rest.reasoning, .content = rest.content, .tool_calls = {}, .call_deltas = {}});
  // An answer with neither text nor calls still has its (empty) message.
  if (rest.tool_calls.empty() && open_ != Item::Message && open_ != Item::FunctionCall) {
    bool has_message = false;
    for (const ordered_json& item : output_) {
      has_message = has_message || item["type"] == "message" || item["type"] == "function_call";
    }
    if (!has_message) out += open(Item::Message);
  }
  out += close();
  for (const ToolCall& call : rest.tool_calls) {  // whole calls: an item each, arguments in one delta
    out += feed_call({.index = 0, .id = call.id, .name = call.name, .arguments = call.arguments});
    out += close();
  }
  const ordered_json response = response_json(meta_, output_, incomplete, usage);
  out += event(incomplete ? "response.incomplete" : "response.completed", {{"response", response}});
  return out;
}

}  // namespace gufo::server
