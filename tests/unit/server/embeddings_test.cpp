// POST /v1/embeddings' request and answer: OpenAI's four input forms, encoding_format and
// dimensions read with their types and ranges checked (the error names the field); vectors
// made unit length in double; base64 of little-endian float32 against known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "server/embeddings_request.h"
#include "server/embeddings_response.h"

namespace gufo::server {
namespace {

using nlohmann::ordered_json;

std::variant<EmbeddingsRequest, ApiError> parse(const std::string& json) {
  return parse_embeddings_request(ordered_json::parse(json),
                                  EmbeddingsLimits{.max_inputs = 4, .n_vocab = 100, .n_embd = 8});
}

EmbeddingsRequest ok(const std::string& json) {
  auto r = parse(json);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << json << ": " << e->message;
    return {};
  }
  return std::get<EmbeddingsRequest>(r);
}

ApiError refused(const std::string& json) {
  auto r = parse(json);
  if (!std::holds_alternative<ApiError>(r)) {
    ADD_FAILURE() << json << " was accepted";
    return {};
  }
  EXPECT_EQ(std::get<ApiError>(r).status, 400) << json;
  return std::get<ApiError>(r);
}

TEST(EmbeddingsRequest, TakesEachOfOpenAIsInputForms) {
  EXPECT_EQ(ok(R"({"input": "hi"})").inputs, (std::vector<EmbeddingInput>{"hi"}));
  EXPECT_EQ(ok(R"({"input": ["a", "b"]})").inputs, (std::vector<EmbeddingInput>{"a", "b"}));
  EXPECT_EQ(ok(R"({"input": [1, 2, 99]})").inputs, (std::vector<EmbeddingInput>{std::vector<int32_t>{1, 2, 99}}));
  EXPECT_EQ(ok(R"({"input": [[1], "x", [0, 5]]})").inputs,
            (std::vector<EmbeddingInput>{std::vector<int32_t>{1}, "x", std::vector<int32_t>{0, 5}}));
  const EmbeddingsRequest r =
      ok(R"({"input": "hi", "model": "m", "user": "u", "encoding_format": "base64", "dimensions": 8})");
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.base64);
  EXPECT_EQ(r.dimensions, 8);
  const EmbeddingsRequest plain = ok(R"({"input": "hi", "encoding_format": null, "dimensions": null})");
  EXPECT_FALSE(plain.base64);
  EXPECT_FALSE(plain.dimensions.has_value());
}

TEST(EmbeddingsRequest, RefusesWhatIsMalformedNamingTheField) {
  EXPECT_EQ(refused(R"({})").code, "missing_required_parameter");
  for (const char* json :
       {R"({"input": ""})", R"({"input": []})", R"({"input": 3})", R"({"input": null})", R"({"input": ["a", ""]})",
        R"({"input": ["a", 1]})", R"({"input": [1, "a"]})", R"({"input": [1.5]})", R"({"input": [[1], []]})",
        R"({"input": [100]})", R"({"input": [-1]})", R"({"input": [[1], [2, 100]]})",
        R"({"input": ["a", "b", "c", "d", "e"]})", R"({"input": [{"text": "a"}]})"}) {
    EXPECT_EQ(refused(json).param, "input") << json;
  }
  EXPECT_NE(refused(R"({"input": [[1], [2, 100]]})").message.find("'input[1]' has token id 100"), std::string::npos);
  for (const char* json : {R"({"input": "a", "encoding_format": "int8"})", R"({"input": "a", "encoding_format": 1})"}) {
    EXPECT_EQ(refused(json).param, "encoding_format") << json;
  }
  for (const char* json : {R"({"input": "a", "dimensions": 0})", R"({"input": "a", "dimensions": 9})",
                           R"({"input": "a", "dimensions": 2.5})", R"({"input": "a", "dimensions": "4"})"}) {
    EXPECT_EQ(refused(json).param, "dimensions") << json;
  }
  EXPECT_EQ(refused(R"([1, 2])").message, "the body must be a JSON object");
}

TEST(EmbeddingsResponse, UnitLengthOverTheKeptDimensions) {
  const std::vector<float> v = {3.0f, 4.0f, 12.0f};
  EXPECT_EQ(unit_embedding(v, std::nullopt), (std::vector<float>{3.0f / 13, 4.0f / 13, 12.0f / 13}));
  EXPECT_EQ(unit_embedding(v, 2), (std::vector<float>{0.6f, 0.8f}));
  EXPECT_EQ(unit_embedding(std::vector<float>{0.0f, 0.0f}, std::nullopt), (std::vector<float>{0.0f, 0.0f}));
  // Squares summed in double: no overflow for large components.
  const std::vector<float> big = unit_embedding(std::vector<float>{3e30f, 4e30f}, std::nullopt);
  EXPECT_FLOAT_EQ(big[0], 0.6f);
  EXPECT_FLOAT_EQ(big[1], 0.8f);
}

TEST(EmbeddingsResponse, Base64IsLittleEndianFloat32) {
  // 1.0f = 00 00 80 3f; -2.0f = 00 00 00 c0; 0.5f = 00 00 00 3f.
  EXPECT_EQ(embedding_base64(std::vector<float>{1.0f}), "AACAPw==");
  EXPECT_EQ(embedding_base64(std::vector<float>{1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(embedding_base64(std::vector<float>{1.0f, -2.0f, 0.5f}), "AACAPwAAAMAAAAA/");
  EXPECT_EQ(embedding_base64(std::vector<float>{}), "");
}

TEST(EmbeddingsResponse, OpenAIsListShapeWithShortestFloats) {
  const ordered_json body = embeddings_json("m", {{0.1f, -0.25f}, {1.0f, 0.0f}}, false, 7);
  EXPECT_EQ(body.dump(), R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.25]},)"
                         R"({"object":"embedding","index":1,"embedding":[1.0,0.0]}],"model":"m",)"
                         R"("usage":{"prompt_tokens":7,"total_tokens":7}})");
  // Read back as float32, each value is the float that was sent.
  EXPECT_EQ(static_cast<float>(body["data"][0]["embedding"][0].get<double>()), 0.1f);
  EXPECT_EQ(embeddings_json("m", {{1.0f}}, true, 1)["data"][0]["embedding"], "AACAPw==");
}

}  // namespace
}  // namespace gufo::server
