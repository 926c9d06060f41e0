// Parses the body of OpenAI's Responses API (POST /v1/responses) into the CompletionRequest
// that the generation takes. `input` (a string, or items: messages with input_text /
// output_text parts, function_call and function_call_output items) becomes the OpenAI-shaped
// chat messages the template reads, after `instructions` (a system message) and the stored
// conversation of `previous_response_id` (server/response_store.h); flat function tools
// {type, name, parameters} become chat tools; max_output_tokens is max_tokens.
// Tested by tests/unit/server/responses_test.cpp and tests/functional/responses.test.mjs
// (OpenAI's own client).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>

#include "server/openai_request.h"

namespace gufo::server {

struct ResponsesRequest {
  CompletionRequest request;              // messages: the stored conversation + this input
  nlohmann::ordered_json input_messages;  // this request's input alone, as chat messages
  std::string previous_response_id;
  bool store = true;
  std::optional<std::string> instructions;
};

// `previous` is the stored conversation of previous_response_id (null when absent or not
// asked for); the caller looks it up, as only it knows the store.
std::variant<ResponsesRequest, ApiError> parse_responses_request(const nlohmann::ordered_json& body,
                                                                 const nlohmann::ordered_json* previous,
                                                                 const RequestLimits& limits);

}  // namespace gufo::server
