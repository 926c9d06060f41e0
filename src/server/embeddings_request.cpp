// parse_embeddings_request (see embeddings_request.h).
#include "server/embeddings_request.h"

#include <limits>

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

// `ids` as token ids below n_vocab; `where` names the field in errors.
std::variant<std::vector<int32_t>, ApiError> token_ids(const ordered_json& ids, int32_t n_vocab,
                                                       const std::string& where) {
  if (ids.empty()) return bad_request(where + " is an empty array of token ids", "input");
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (const ordered_json& id : ids) {
    if (!id.is_number_integer()) return bad_request(where + " mixes token ids with other values", "input");
    const bool in_range = id.is_number_unsigned() ? id.get<uint64_t>() < static_cast<uint64_t>(n_vocab)
                                                  : id.get<int64_t>() >= 0 && id.get<int64_t>() < n_vocab;
    if (!in_range) {
      return bad_request(where + " has token id " + id.dump() + "; the vocabulary has " + std::to_string(n_vocab),
                         "input");
    }
    const auto value = id.get<int64_t>();
    out.push_back(static_cast<int32_t>(value));
  }
  return out;
}

// `input` in one of OpenAI's four forms.
std::variant<std::vector<EmbeddingInput>, ApiError> parse_inputs(const ordered_json& input,
                                                                 const EmbeddingsLimits& limits) {
  std::vector<EmbeddingInput> inputs;
  if (input.is_string()) {
    if (input.get_ref<const std::string&>().empty()) return bad_request("'input' is an empty string", "input");
    inputs.emplace_back(input.get<std::string>());
    return inputs;
  }
  if (!input.is_array()) {
    return bad_request("'input' must be a string, an array of strings, or an array of token ids", "input");
  }
  if (input.empty()) return bad_request("'input' is an empty array", "input");
  if (input.size() > limits.max_inputs) {
    return bad_request("'input' has " + std::to_string(input.size()) + " items; at most " +
                           std::to_string(limits.max_inputs) + " per request",
                       "input");
  }
  if (input.front().is_number_integer()) {
    auto ids = token_ids(input, limits.n_vocab, "'input'");
    if (auto* error = std::get_if<ApiError>(&ids)) return std::move(*error);
    inputs.emplace_back(std::get<std::vector<int32_t>>(std::move(ids)));
    return inputs;
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const ordered_json& item = input[i];
    const std::string where = "'input[" + std::to_string(i) + "]'";
    if (item.is_string()) {
      if (item.get_ref<const std::string&>().empty()) return bad_request(where + " is an empty string", "input");
      inputs.emplace_back(item.get<std::string>());
    } else if (item.is_array()) {
      auto ids = token_ids(item, limits.n_vocab, where);
      if (auto* error = std::get_if<ApiError>(&ids)) return std::move(*error);
      inputs.emplace_back(std::get<std::vector<int32_t>>(std::move(ids)));
    } else {
      return bad_request(where + " must be a string or an array of token ids", "input");
    }
  }
  return inputs;
}

}  // namespace

std::variant<EmbeddingsRequest, ApiError> parse_embeddings_request(const ordered_json& body,
                                                                   const EmbeddingsLimits& limits) {
  if (!body.is_object()) return bad_request("the body must be a JSON object");
  EmbeddingsRequest request;
  if (auto model = body.find("model"); model != body.end() && model->is_string())
    request.model = model->get<std::string>();
  const auto input = body.find("input");
  if (input == body.end()) return bad_request("'input' is required", "input", "missing_required_parameter");
  auto inputs = parse_inputs(*input, limits);
  if (auto* error = std::get_if<ApiError>(&inputs)) return std::move(*error);
  request.inputs = std::get<std::vector<EmbeddingInput>>(std::move(inputs));

  if (auto format = body.find("encoding_format"); format != body.end() && !format->is_null()) {
    if (!format->is_string() || (*format != "float" && *format != "base64")) {
      return bad_request("'encoding_format' must be \"float\" or \"base64\"", "encoding_format");
    }
    request.base64 = *format == "base64";
  }
  if (auto dims = body.find("dimensions"); dims != body.end() && !dims->is_null()) {
    if (!dims->is_number_integer() || dims->get<int64_t>() < 1 || dims->get<int64_t>() > limits.n_embd) {
      return bad_request("'dimensions' must be an integer from 1 to the model's " + std::to_string(limits.n_embd),
                         "dimensions");
    }
    request.dimensions = dims->get<int64_t>();
  }
  return request;
}

}  // namespace gufo::server
