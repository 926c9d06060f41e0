// The body of an answer to POST /v1/embeddings (OpenAI's shape): every vector shortened to
// `dimensions` when asked and scaled to unit length (L2), as float arrays or as base64 of
// little-endian float32 (what OpenAI's clients decode). A NaN component (a model that
// overflowed) is JSON null, as nlohmann::json writes it. Tested by
// tests/unit/server/embeddings_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gufo::server {

// The first `dimensions` components (all when unset) divided by their Euclidean norm
// (summed in double); a zero vector stays zero.
std::vector<float> unit_embedding(std::span<const float> pooled, std::optional<int64_t> dimensions);

// RFC 4648 base64 of the vector's float32 values in little-endian byte order.
std::string embedding_base64(std::span<const float> values);

nlohmann::ordered_json embeddings_json(const std::string& model, const std::vector<std::vector<float>>& vectors,
                                       bool base64, int64_t prompt_tokens);

}  // namespace gufo::server
