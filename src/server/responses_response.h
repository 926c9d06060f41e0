// OpenAI's Responses API response shapes: the response object (output items: reasoning,
// message with output_text, function_call; usage; status completed or incomplete) and its
// server-sent events (response.created, .in_progress, .output_item.added/.done,
// .content_part.added/.done, .output_text.delta/.done, .reasoning_text.delta/.done,
// .function_call_arguments.delta/.done, .completed or .incomplete), each with its
// sequence_number; a call streamed as deltas (AnswerSplitter) is a function_call item whose
// arguments come as they are written. Tested by tests/unit/server/responses_test.cpp and through OpenAI's client
// (tests/functional/responses.test.mjs).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "engine/generate.h"
#include "server/generation.h"

namespace gufo::server {

// What a response says besides its output.
struct ResponseMeta {
  std::string id;  // resp_...
  std::string model;
  int64_t created_at = 0;
  std::string previous_response_id;
  nlohmann::ordered_json instructions;  // a string or null
};

struct ResponseUsage {
  int64_t input_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t output_tokens = 0;
};

// The output items of an answer: reasoning, the message, then one function_call per call.
nlohmann::ordered_json output_items(const AnswerParts& answer);

// max_output_tokens or a full context: "incomplete"; anything else: "completed".
bool response_incomplete(engine::StopReason reason);

nlohmann::ordered_json response_json(const ResponseMeta& meta, const nlohmann::ordered_json& output, bool incomplete,
                                     const ResponseUsage& usage, bool in_progress = false);

// The answer as the chat messages a follow-up's template reads (content, reasoning_content,
// tool_calls with their call ids): what previous_response_id brings back.
nlohmann::ordered_json assistant_message(const AnswerParts& answer);

// The event stream of one response, as SSE text to write.
class ResponsesEventStream {
 public:
  explicit ResponsesEventStream(ResponseMeta meta) : meta_(std::move(meta)) {}
  std::string start();
  std::string feed(const AnswerParts& parts);
  // calls_whole: whether streamed calls are whole (a call cut short closes "incomplete").
  std::string finish(const AnswerParts& rest, bool incomplete, const ResponseUsage& usage, bool calls_whole = true);

 private:
  enum class Item { None, Reasoning, Message, FunctionCall };
  std::string event(const std::string& type, nlohmann::ordered_json data);
  std::string open(Item item);
  std::string close(const char* call_status = "completed");

  ResponseMeta meta_;
  int64_t sequence_ = 0;
  Item open_ = Item::None;
  std::string item_id_;
  std::string text_;  // of the open item
  ToolCall call_;     // the open function_call item's call, its arguments so far
  // Opens a function_call item for a streamed call's first delta, adds any delta's arguments.
  std::string feed_call(const ToolCallDelta& delta);
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();  // closed items
};

}  // namespace gufo::server
