// Parses the body of Anthropic's Messages API (POST /v1/messages and
// /v1/messages/count_tokens) into the CompletionRequest that the generation takes, so both
// APIs share one path to the engine (server/generation.h). The Anthropic shapes are checked
// here, with Anthropic's field paths in errors ("messages.1.content.0.tool_use_id"); then
// the conversation becomes the OpenAI-shaped messages the chat template reads:
//   system (string or text blocks)  -> a system message
//   user text blocks                -> one user message; tool_result blocks -> tool messages
//   assistant text / tool_use       -> content and tool_calls; thinking -> reasoning_content
//   tools {name, description, input_schema} -> functions; tool_choice auto/any/tool/none
//   thinking {type: enabled|disabled} -> chat_template_kwargs.enable_thinking
// Images and documents are refused (this model reads text only).
// Tested by tests/unit/server/anthropic_request_test.cpp and tests/functional/anthropic.test.mjs
// (Anthropic's own client).
#pragma once

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace gufo::server {

// count_only: /v1/messages/count_tokens (max_tokens is not required there).
ParsedRequest parse_anthropic_request(const nlohmann::ordered_json& body, const RequestLimits& limits, bool count_only);

}  // namespace gufo::server
