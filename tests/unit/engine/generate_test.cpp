// Generation: stop strings are held back until they cannot match and never printed, and
// greedy generation on the tiny models gives transformers' greedy tokens
// (tests/data/models/*/reference/greedy.json).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "tests/unit/common/temp_path.h"
#include "tokenizer/tokenizer.h"

namespace gufo::engine {
namespace {

namespace fs = std::filesystem;

TEST(StopStrings, HoldBackOnlyWhatCouldStillMatch) {
  const std::vector<std::string> stops = {"</answer>", "STOP"};
  size_t found = 0;
  EXPECT_EQ(stop_safe_prefix("hello </ans", stops, found), 6u);
  EXPECT_EQ(found, std::string::npos);
  EXPECT_EQ(stop_safe_prefix("hello world", stops, found), 11u);
  EXPECT_EQ(stop_safe_prefix("abc ST", stops, found), 4u);
  EXPECT_EQ(stop_safe_prefix("x</answer>y STOP", stops, found), 1u);
  EXPECT_EQ(found, 1u);
  EXPECT_EQ(stop_safe_prefix("", stops, found), 0u);
  // Which stop string ended the text: the first listed of those that start there.
  EXPECT_EQ(stop_string_at("x</answer>y STOP", 1, stops), "</answer>");
  EXPECT_EQ(stop_string_at("y STOP", 2, stops), "STOP");
  const std::vector<std::string> nested = {"ab", "a"};
  EXPECT_EQ(stop_string_at("xab", 1, nested), "ab");
}

class GreedyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GreedyTest, MatchesTransformersGreedyTokens) {
  const fs::path dir = fs::path(GUFO_TEST_DATA_DIR) / "models" / GetParam();
  std::ifstream in(dir / "reference" / "greedy.json");
  const nlohmann::json greedy = nlohmann::json::parse(in);
  const auto prompt = greedy.at("prompt_tokens").get<std::vector<int32_t>>();
  const auto expected = greedy.at("new_tokens").get<std::vector<int32_t>>();

  const fs::path gguf = testing::process_temp_path(std::string("gufo_greedy_") + GetParam(), ".gguf");
  const std::string command =
      std::string(GUFO_BINARY) + " convert '" + dir.string() + "' -o '" + gguf.string() + "' --outtype f32";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  cpu::CpuBackend cpu(2);
  auto model = Model::load(gguf.string(), cpu);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto tok = tokenizer::Tokenizer::load((*model)->file());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  auto session = Session::create(**model, cpu, 64, DType::F32);
  ASSERT_TRUE(session.ok());
  GenerateOptions options;
  options.n_predict = static_cast<int32_t>(expected.size());
  options.sampler.temperature = 0.0f;
  // NOTE(test): the reference does not stop at EOS; neither may we, so no token may be EOG.
  auto result = generate(*session, *tok, prompt, options, [](std::string_view) {});
  ASSERT_TRUE(result.ok()) << result.error().message;
  const size_t n = result->tokens.size();
  ASSERT_LE(n, expected.size());
  EXPECT_EQ(result->tokens, std::vector<int32_t>(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(n)));
  if (n < expected.size()) {
    EXPECT_EQ(result->reason, StopReason::EndOfGeneration);
  }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, GreedyTest, ::testing::Values("tiny-qwen3", "tiny-llama", "tiny-qwen2"),
                         [](const auto& test_info) {
                           std::string name = test_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace gufo::engine
