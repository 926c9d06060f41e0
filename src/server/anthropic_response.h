// Anthropic's Messages API response shapes: the whole message, its server-sent events
// (message_start, content_block_start/_delta/_stop for thinking, text and tool_use blocks,
// message_delta with the final usage, message_stop, ping) and the error body {"type": "error", "error": {...}}.
// Tested by tests/unit/server/anthropic_response_test.cpp and through Anthropic's own client
// (tests/functional/anthropic.test.mjs).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/generate.h"
#include "server/api_error.h"
#include "server/generation.h"

namespace gufo::server {

// {"type": "error", "error": {"type": <Anthropic's name for the status>, "message": ...}}.
nlohmann::ordered_json anthropic_error_body(const ApiError& error);

// end_turn, max_tokens, stop_sequence, or tool_use when the answer has a tool_use block.
std::string anthropic_stop_reason(engine::StopReason reason, const AnswerParts& answer);

struct AnthropicUsage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cache_read_input_tokens = 0;
};

// The assistant's content blocks: thinking, text, then one tool_use per call. A call whose
// arguments are not a JSON object cannot be a tool_use block; it stays text.
nlohmann::ordered_json content_blocks(const AnswerParts& answer);

nlohmann::ordered_json message_json(const std::string& id, const std::string& model, const AnswerParts& answer,
                                    const std::string& stop_reason, const std::string& stop_sequence,
                                    const AnthropicUsage& usage);

std::string new_message_id();  // msg_<random>

// The event stream of one message, as SSE text to write: start() first, then feed() for each
// piece of the answer, then finish(). A call streamed as deltas (AnswerSplitter) is a tool_use
// block whose input comes as input_json_delta pieces as it is written.
class AnthropicEventStream {
 public:
  AnthropicEventStream(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}
  std::string start(int64_t input_tokens, int64_t cache_read_input_tokens);
  std::string feed(const AnswerParts& parts);
  // The rest of the answer (tool calls included), then message_delta and message_stop.
  std::string finish(const AnswerParts& rest, const std::string& stop_reason, const std::string& stop_sequence,
                     const AnthropicUsage& usage);
  static std::string ping();

 private:
  enum class Block { None, Thinking, Text, ToolUse };
  std::string open(Block block);
  std::string close();
  // A streamed call's piece: its first opens a tool_use block; arguments become input_json_delta.
  std::string feed_call(const ToolCallDelta& delta);

  std::string id_;
  std::string model_;
  Block open_ = Block::None;
  int index_ = -1;
};

}  // namespace gufo::server
