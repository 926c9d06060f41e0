// Parses and checks the body of POST /v1/embeddings (OpenAI's shape): `input` as a string,
// an array of strings, an array of token ids, or an array of such arrays; `encoding_format`
// float or base64 (what OpenAI's clients ask for by default); `dimensions` to shorten the
// vectors. A wrong type or value is a 400 naming the field; unknown fields are ignored.
// Tested by tests/unit/server/embeddings_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/api_error.h"

namespace gufo::server {

struct EmbeddingsLimits {
  size_t max_inputs = 2048;  // OpenAI's limit
  int32_t n_vocab = 0;       // token ids must be below it
  int64_t n_embd = 0;        // dimensions may not exceed it
};

// One input: text to tokenize, or token ids to take as they are.
using EmbeddingInput = std::variant<std::string, std::vector<int32_t>>;

struct EmbeddingsRequest {
  std::string model;
  std::vector<EmbeddingInput> inputs;
  bool base64 = false;                // encoding_format: "base64" (little-endian float32)
  std::optional<int64_t> dimensions;  // keep the first N components, then normalize again
};

std::variant<EmbeddingsRequest, ApiError> parse_embeddings_request(const nlohmann::ordered_json& body,
                                                                   const EmbeddingsLimits& limits);

}  // namespace gufo::server
