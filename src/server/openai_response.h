// Builds OpenAI-shaped response bodies: chat.completion and text_completion objects, their
// streaming chunks, usage, and log-probabilities in the chat and legacy completions
// layouts. Token strings that are not valid UTF-8 on their own keep their raw bytes in
// `bytes` (chat) and show U+FFFD in the text. Tested through tests/functional (the OpenAI
// client parses every shape).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/json_text.h"
#include "server/tool_call_stream.h"
#include "server/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace gufo::server {

// One choice as it accumulates.
struct ChoiceState {
  std::string text;
  std::string reasoning;             // chat: the thoughts split off the text (server/reasoning.h)
  std::vector<ToolCall> tool_calls;  // chat with tools: parsed out of the text
  std::vector<engine::TokenLogprob> logprobs;
  std::string finish_reason;  // empty while running
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
  int32_t drafted_tokens = 0;   // speculative decoding: verified,
  int32_t accepted_tokens = 0;  // and kept
};

struct ResponseHeader {
  std::string id;  // chatcmpl-... / cmpl-...
  std::string model;
  int64_t created = 0;  // Unix seconds
};

std::string new_response_id(bool chat);
// OpenAI's finish_reason for an engine stop reason.
std::string finish_reason_name(engine::StopReason reason);

// Speculative decoding's counts (RequestEvent::drafted_tokens, accepted_tokens), summed over
// a request's choices; reported as OpenAI reports predicted outputs.
struct DraftUsage {
  int32_t drafted = 0;
  int32_t accepted = 0;
};
// With drafts: completion_tokens_details' accepted_prediction_tokens (drafts kept) and
// rejected_prediction_tokens (drafts verified and not kept).
nlohmann::ordered_json usage_json(int32_t prompt_tokens, int32_t completion_tokens, int32_t cached_tokens,
                                  DraftUsage drafts = {});
nlohmann::ordered_json chat_logprobs_json(const tokenizer::Tokenizer& tokenizer,
                                          const std::vector<engine::TokenLogprob>& logprobs);
nlohmann::ordered_json completion_logprobs_json(const tokenizer::Tokenizer& tokenizer,
                                                const std::vector<engine::TokenLogprob>& logprobs, size_t text_offset);

// The whole response of a non-streaming request.
nlohmann::ordered_json completion_json(const ResponseHeader& header, bool chat, const std::vector<ChoiceState>& choices,
                                       bool with_logprobs, const tokenizer::Tokenizer& tokenizer,
                                       int32_t prompt_tokens);

// One streaming chunk for one choice: a text delta (with its log-probabilities, and in chat
// a reasoning delta beside it), or the final one with finish_reason. `first` adds the
// assistant role (chat).
nlohmann::ordered_json chunk_json(const ResponseHeader& header, bool chat, int32_t choice, const std::string& text,
                                  const std::string& reasoning, const std::vector<engine::TokenLogprob>* logprobs,
                                  const std::string& finish_reason, bool first, bool with_usage_field,
                                  const tokenizer::Tokenizer& tokenizer, size_t text_offset);
// A streaming chunk that carries pieces of a choice's tool calls: a call's first piece with
// its index, id, type and name, later ones with its index and more of its arguments.
nlohmann::ordered_json tool_call_deltas_chunk_json(const ResponseHeader& header, int32_t choice,
                                                   const std::vector<ToolCallDelta>& deltas, bool with_usage_field);
// A streaming chunk that carries a choice's tool calls whole (one piece per call).
nlohmann::ordered_json tool_calls_chunk_json(const ResponseHeader& header, int32_t choice,
                                             const std::vector<ToolCall>& calls, bool with_usage_field);
// The usage chunk that ends a stream when stream_options.include_usage is set.
nlohmann::ordered_json usage_chunk_json(const ResponseHeader& header, bool chat, const nlohmann::ordered_json& usage);

}  // namespace gufo::server
