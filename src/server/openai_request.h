// Parses and checks the body of POST /v1/chat/completions and /v1/completions into what the
// engine needs. Fields OpenAI defines and Gufo supports are type-checked and range-checked
// (a wrong type or value is a 400 naming the field); fields Gufo does not know are ignored,
// as OpenAI's clients expect. Sizes are bounded (messages, stop strings, n, logit_bias).
// Tested by tests/unit/server/openai_request_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/request.h"
#include "engine/sampler.h"
#include "server/api_error.h"
#include "server/grammar_cache.h"
#include "server/tool_calls.h"

namespace gufo::server {

struct RequestLimits {
  size_t max_messages = 4096;
  int32_t max_n = 128;  // OpenAI's limit
  size_t max_stop = 16;
  size_t max_stop_length = 256;
  int32_t max_top_logprobs = 20;
  size_t max_logit_bias = 1024;
  int32_t n_vocab = 0;     // logit_bias keys must be below it
  size_t max_tools = 128;  // OpenAI's limit
};

// `tool_choice`: whether and which offered tools the answer may call. Required and Named
// constrain the answer to calls; Auto lets the model choose, and constrains a call once it
// opens one (server/tool_grammar.h); None offers no tools at all.
struct ToolChoice {
  enum class Mode { Auto, None, Required, Named };
  Mode mode = Mode::Auto;
  std::string name;  // Named: the one function allowed
};

struct CompletionRequest {
  bool chat = true;
  std::string model;
  nlohmann::ordered_json messages;                      // chat: normalized (text parts joined)
  std::optional<nlohmann::ordered_json> tools;          // chat: passed to the template (not with tool_choice none)
  std::vector<std::string> callable_tools;              // chat: names a returned tool call may have
  std::vector<nlohmann::ordered_json> tool_parameters;  // chat: the schema of each callable tool's arguments
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;              // false: at most one call per answer
  ToolSyntax tool_syntax = ToolSyntax::Hermes;  // chat: the model's (set from its template when planned)
  std::optional<bool> enable_thinking;          // chat_template_kwargs.enable_thinking
  std::optional<bool> separate_reasoning;       // chat: reasoning_format (none: false); unset: the server's
  std::string prompt;                           // completions
  std::optional<int32_t> max_tokens;
  // Beyond what the context leaves, max_tokens is shortened rather than refused: clients of
  // Anthropic's API and of the Responses API send a generous bound (32000) by habit.
  bool max_tokens_is_bound = false;
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  engine::SamplerParams sampler;
  bool seeded = false;
  std::vector<std::string> stop;
  bool logprobs = false;
  int32_t top_logprobs = 0;
  bool echo = false;  // completions: not supported when true
  // The answer's constraint: GBNF (response_format json_object's, or llama.cpp's 'grammar') or
  // a JSON Schema's text (response_format json_schema, or llama.cpp's 'json_schema').
  std::optional<std::string> grammar;
  GrammarSyntax grammar_syntax = GrammarSyntax::Gbnf;
  std::string grammar_param;  // the field it came from, for errors
  // Speculative decoding (Gufo's fields; unset: the server's --spec, --draft-max, --draft-min).
  std::optional<engine::SpecMode> spec;
  std::optional<int32_t> draft_max;
  std::optional<int32_t> draft_min;
  int32_t slot = -1;  // llama.cpp's id_slot: the engine slot to run in (-1: any)
};

using ParsedRequest = std::variant<CompletionRequest, ApiError>;

// `body` is the parsed JSON (an object); `chat` selects the endpoint's schema.
ParsedRequest parse_completion_request(const nlohmann::ordered_json& body, bool chat, const RequestLimits& limits);

}  // namespace gufo::server
