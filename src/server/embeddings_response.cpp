// The /v1/embeddings answer (see embeddings_response.h).
#include "server/embeddings_response.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <string>

namespace gufo::server {

using nlohmann::ordered_json;

std::vector<float> unit_embedding(std::span<const float> pooled, std::optional<int64_t> dimensions) {
  const size_t n = dimensions ? std::min(pooled.size(), static_cast<size_t>(*dimensions)) : pooled.size();
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(pooled[i]) * static_cast<double>(pooled[i]);
  const double scale = sum > 0.0 ? 1.0 / std::sqrt(sum) : 0.0;
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<double>(pooled[i]) * scale);
  return out;
}

std::string embedding_base64(std::span<const float> values) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(values.size() * sizeof(float));
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    for (size_t b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<unsigned char>(bits >> (8 * b));  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = bytes.size() - i;
    const uint32_t chunk = (uint32_t{bytes[i]} << 16) | (left > 1 ? uint32_t{bytes[i + 1]} << 8 : 0) |
                           (left > 2 ? uint32_t{bytes[i + 2]} : 0);
    out += kAlphabet[(chunk >> 18) & 63];
    out += kAlphabet[(chunk >> 12) & 63];
    out += left > 1 ? kAlphabet[(chunk >> 6) & 63] : '=';
    out += left > 2 ? kAlphabet[chunk & 63] : '=';
  }
  return out;
}

namespace {

// A float as the double with its shortest decimal text ("0.4973422", not the float's exact
// binary value "0.49734219908714294"), so that the JSON carries each float in as few digits as
// read back the same.
double shortest_double(float value) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof(text), value);
  double out = static_cast<double>(value);
  if (ec == std::errc()) std::from_chars(text, end, out);  // locale-independent, unlike strtod
  return out;
}

}  // namespace

ordered_json embeddings_json(const std::string& model, const std::vector<std::vector<float>>& vectors, bool base64,
                             int64_t prompt_tokens) {
  ordered_json data = ordered_json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    ordered_json item{{"object", "embedding"}, {"index", i}};
    if (base64) {
      item["embedding"] = embedding_base64(vectors[i]);
    } else {
      ordered_json values = ordered_json::array();
      for (float v : vectors[i]) values.push_back(shortest_double(v));
      item["embedding"] = std::move(values);
    }
    data.push_back(std::move(item));
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace gufo::server
