// The forward pass against Hugging Face transformers: tiny random-initialised Qwen3, Llama 3
// (with llama3 rope scaling), Qwen2 and Qwen3-MoE models (tests/data/models, made by
// tools/hf_reference/make_tiny_models.py) are converted with `gufo convert --outtype f32`,
// run on the CPU backend with an f32 KV cache, and their logits compared with the stored
// transformers logits. Also: one batch == token by token, and bad batches are refused.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/npy.h"
#include "engine/model.h"
#include "engine/validate_prefill.h"
#include "tests/unit/common/reference_logits.h"
#include "tests/unit/common/temp_path.h"

namespace gufo {
namespace {

namespace fs = std::filesystem;

// Converts a Hugging Face folder with the real binary, as a user would.
std::string convert(const fs::path& dir, const std::string& outtype) {
  const fs::path out = testing::process_temp_path("gufo_forward_" + dir.filename().string() + "_" + outtype, ".gguf");
  const std::string command =
      std::string(GUFO_BINARY) + " convert '" + dir.string() + "' -o '" + out.string() + "' --outtype " + outtype;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return out.string();
}

// Per position: max |Δ| over the vocabulary divided by max |reference|, so the bound is
// relative to the scale of that row's logits; the worst position is returned.
double max_relative_error(const std::vector<float>& got, const NpyMatrix& ref) {
  double worst = 0.0;
  for (int64_t row = 0; row < ref.rows; ++row) {
    double max_diff = 0.0, max_ref = 0.0;
    for (int64_t col = 0; col < ref.cols; ++col) {
      const size_t i = static_cast<size_t>(row * ref.cols + col);
      max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - ref.data[i]));
      max_ref = std::max(max_ref, std::abs(static_cast<double>(ref.data[i])));
    }
    worst = std::max(worst, max_diff / max_ref);
  }
  return worst;
}

class ForwardTest : public ::testing::TestWithParam<const char*> {
 protected:
  fs::path dir() const { return fs::path(GUFO_TEST_DATA_DIR) / "models" / GetParam(); }
};

TEST_P(ForwardTest, F32LogitsMatchTransformers) {
  const testing::ReferenceLogits ref = testing::load_reference_logits(dir());
  cpu::CpuBackend cpu(2);
  auto model = engine::Model::load(convert(dir(), "f32"), cpu);
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_EQ((*model)->hparams().n_vocab, ref.logits.cols);
  ASSERT_EQ(static_cast<int64_t>(ref.tokens.size()), ref.logits.rows);
  auto session = engine::Session::create(**model, cpu, ref.logits.rows, DType::F32);
  ASSERT_TRUE(session.ok()) << session.error().message;
  auto logits = session->eval(ref.tokens, /*all_logits=*/true);
  ASSERT_TRUE(logits.ok()) << logits.error().message;
  // NOTE(test): the bound for f32 weights; the reference is float64 transformers,
  // whose own float32 run differs from it by ~1.5e-6 (tests/data/models/*/reference/meta.json).
  const double error = max_relative_error(*logits, ref.logits);
  RecordProperty("max_relative_error", std::to_string(error));
  std::printf("%s: max relative logit error %.3e\n", GetParam(), error);
  EXPECT_LE(error, 1e-4);
}

TEST_P(ForwardTest, OneBatchEqualsTokenByToken) {
  const testing::ReferenceLogits ref = testing::load_reference_logits(dir());
  cpu::CpuBackend cpu(2);
  auto model = engine::Model::load(convert(dir(), "f32"), cpu);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto batch = engine::Session::create(**model, cpu, ref.logits.rows, DType::F32);
  auto step = engine::Session::create(**model, cpu, ref.logits.rows, DType::F32);
  ASSERT_TRUE(batch.ok() && step.ok());
  auto all = batch->eval(ref.tokens, true);
  ASSERT_TRUE(all.ok()) << all.error().message;
  const size_t n_vocab = static_cast<size_t>(ref.logits.cols);
  for (size_t i = 0; i < ref.tokens.size(); ++i) {
    auto one = step->eval(std::span<const int32_t>(&ref.tokens[i], 1), false);
    ASSERT_TRUE(one.ok()) << one.error().message;
    for (size_t v = 0; v < n_vocab; ++v) {
      // Same arithmetic in the same order per row; only the matmul split may differ.
      ASSERT_NEAR((*one)[v], (*all)[i * n_vocab + v], 1e-4) << "position " << i << " token " << v;
    }
  }
}

TEST_P(ForwardTest, RefusesBadInput) {
  const testing::ReferenceLogits ref = testing::load_reference_logits(dir());
  cpu::CpuBackend cpu(1);
  auto model = engine::Model::load(convert(dir(), "f32"), cpu);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto too_long = engine::Session::create(**model, cpu, (*model)->hparams().n_ctx_train + 1);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("the model allows"), std::string::npos);

  auto session = engine::Session::create(**model, cpu, 4);
  ASSERT_TRUE(session.ok());
  const std::vector<int32_t> five = {1, 2, 3, 4, 5};
  auto full = session->eval(five, false);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("context full"), std::string::npos);
  const std::vector<int32_t> bad_id = {static_cast<int32_t>(ref.logits.cols)};
  auto out_of_vocab = session->eval(bad_id, false);
  ASSERT_FALSE(out_of_vocab.ok());
  EXPECT_NE(out_of_vocab.error().message.find("outside the vocabulary"), std::string::npos);
}

// Lower-precision weights against the same reference: KL(reference ‖ model) per position
// and top-1 agreement, with an f16 KV cache as users run it. NOTE(test): the bounds are ~3x
// the worst measured over the three models (2026-12-02; mean/max KL: f16 6.5e-6/3.2e-5,
// bf16 3.3e-4/1.7e-3, q8_0 3.9e-3/1.5e-2; top-1 at least 0.98/0.96/0.91 of 56 positions), so
// rounding noise passes and a broken conversion or kernel fails. With the AVX2 kernels
// (8-bit activations) q8_0 measures up to 5.9e-3 / 2.6e-2, about half the bound.
// tiny-qwen3-moe (2026-12-03, AVX2) stays inside the same bounds: f16 1.7e-6/7.6e-6, bf16
// 1.1e-4/2.9e-4, q8_0 2.2e-3/1.1e-2, top-1 1.0/1.0/0.93.
struct QuantCase {
  const char* model;
  const char* outtype;
  double max_mean_kl;
  double max_kl;
  double min_top1;
};

class QuantizedForwardTest : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantizedForwardTest, StaysCloseToTransformers) {
  const QuantCase& c = GetParam();
  const fs::path dir = fs::path(GUFO_TEST_DATA_DIR) / "models" / c.model;
  const testing::ReferenceLogits ref = testing::load_reference_logits(dir);
  cpu::CpuBackend cpu(2);
  auto model = engine::Model::load(convert(dir, c.outtype), cpu);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto session = engine::Session::create(**model, cpu, ref.logits.rows, DType::F16);
  ASSERT_TRUE(session.ok()) << session.error().message;
  auto logits = session->eval(ref.tokens, true);
  ASSERT_TRUE(logits.ok()) << logits.error().message;
  const size_t n_vocab = static_cast<size_t>(ref.logits.cols);
  double sum_kl = 0.0, max_kl = 0.0;
  int64_t same_top1 = 0;
  for (int64_t row = 0; row < ref.logits.rows; ++row) {
    const std::span<const float> want(ref.logits.data.data() + row * n_vocab, n_vocab);
    const std::span<const float> got(logits->data() + row * n_vocab, n_vocab);
    const double kl = engine::kl_divergence(want, got);
    sum_kl += kl;
    max_kl = std::max(max_kl, kl);
    same_top1 += std::max_element(want.begin(), want.end()) - want.begin() ==
                 std::max_element(got.begin(), got.end()) - got.begin();
  }
  const double mean_kl = sum_kl / static_cast<double>(ref.logits.rows);
  const double top1 = static_cast<double>(same_top1) / static_cast<double>(ref.logits.rows);
  std::printf("%s %s: mean KL %.3e, max KL %.3e, top-1 %.3f\n", c.model, c.outtype, mean_kl, max_kl, top1);
  EXPECT_LE(mean_kl, c.max_mean_kl);
  EXPECT_LE(max_kl, c.max_kl);
  EXPECT_GE(top1, c.min_top1);
}

INSTANTIATE_TEST_SUITE_P(
    TinyModels, QuantizedForwardTest,
    ::testing::Values(
        QuantCase{"tiny-qwen3", "f16", 3e-5, 1e-4, 0.95}, QuantCase{"tiny-qwen3", "bf16", 1e-3, 5e-3, 0.9},
        QuantCase{"tiny-qwen3", "q8_0", 1.2e-2, 5e-2, 0.85}, QuantCase{"tiny-llama", "f16", 3e-5, 1e-4, 0.95},
        QuantCase{"tiny-llama", "bf16", 1e-3, 5e-3, 0.9}, QuantCase{"tiny-llama", "q8_0", 1.2e-2, 5e-2, 0.85},
        QuantCase{"tiny-qwen2", "f16", 3e-5, 1e-4, 0.95}, QuantCase{"tiny-qwen2", "bf16", 1e-3, 5e-3, 0.9},
        QuantCase{"tiny-qwen2", "q8_0", 1.2e-2, 5e-2, 0.85}, QuantCase{"tiny-qwen3-moe", "f16", 3e-5, 1e-4, 0.95},
        QuantCase{"tiny-qwen3-moe", "bf16", 1e-3, 5e-3, 0.9}, QuantCase{"tiny-qwen3-moe", "q8_0", 1.2e-2, 5e-2, 0.85}),
    [](const auto& test_info) {
      std::string name = std::string(test_info.param.model) + "_" + test_info.param.outtype;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

INSTANTIATE_TEST_SUITE_P(TinyModels, ForwardTest,
                         ::testing::Values("tiny-qwen3", "tiny-llama", "tiny-qwen2", "tiny-qwen3-moe"),
                         [](const auto& test_info) {
                           std::string name = test_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace gufo
