// Mixture of experts (qwen3moe): the routing maths on hand-made cases (softmax, top-k with
// ties, renormalization), the CPU MoE FFN against a plain per-token reference, greedy
// generation on tiny-qwen3-moe against transformers' greedy tokens, and bad MoE files
// refused at load with a one-line error. The logits themselves are checked against
// transformers by forward_test.cpp.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/ops/moe.h"
#include "backend/cpu/ops/ops.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tests/unit/common/temp_path.h"
#include "tokenizer/tokenizer.h"

namespace gufo {
namespace {

namespace fs = std::filesystem;
using cpu::ExpertChoice;

std::vector<ExpertChoice> route(const std::vector<float>& logits, int64_t n_used, bool normalize,
                                std::vector<float>* probs_out = nullptr) {
  std::vector<float> probs(logits.size());
  std::vector<ExpertChoice> out(static_cast<size_t>(n_used));
  cpu::route_token(logits.data(), static_cast<int64_t>(logits.size()), n_used, normalize, probs, out);
  if (probs_out != nullptr) *probs_out = probs;
  return out;
}

TEST(MoeRouting, SoftmaxTopKWithTiesAndRenormalization) {
  // Probabilities proportional to 1, 4, 2, 4, 1 (sum 12): experts 1 and 3 tie for first.
  const std::vector<float> logits = {0.0f, std::log(4.0f), std::log(2.0f), std::log(4.0f), 0.0f};
  std::vector<float> probs;
  const auto raw = route(logits, 3, /*normalize=*/false, &probs);
  const std::vector<float> want_probs = {1 / 12.0f, 4 / 12.0f, 2 / 12.0f, 4 / 12.0f, 1 / 12.0f};
  for (size_t e = 0; e < probs.size(); ++e) EXPECT_NEAR(probs[e], want_probs[e], 1e-6f) << e;
  // The tie goes to the lower index first; then the next most probable.
  ASSERT_EQ(raw.size(), 3u);
  EXPECT_EQ(raw[0].expert, 1);
  EXPECT_EQ(raw[1].expert, 3);
  EXPECT_EQ(raw[2].expert, 2);
  EXPECT_NEAR(raw[0].weight, 4 / 12.0f, 1e-6f);
  EXPECT_NEAR(raw[2].weight, 2 / 12.0f, 1e-6f);

  const auto norm = route(logits, 3, /*normalize=*/true);
  EXPECT_EQ(norm[0].expert, 1);
  EXPECT_NEAR(norm[0].weight, 0.4f, 1e-6f);
  EXPECT_NEAR(norm[1].weight, 0.4f, 1e-6f);
  EXPECT_NEAR(norm[2].weight, 0.2f, 1e-6f);

  // A tie at the cut: of experts 1 and 2 (equal), the lower index is kept.
  const auto cut = route({std::log(4.0f), std::log(2.0f), std::log(2.0f), 0.0f}, 2, true);
  EXPECT_EQ(cut[0].expert, 0);
  EXPECT_EQ(cut[1].expert, 1);
  EXPECT_NEAR(cut[0].weight, 4 / 6.0f, 1e-6f);
  EXPECT_NEAR(cut[1].weight, 2 / 6.0f, 1e-6f);

  // All equal: the first k, equal weights; k = n_expert takes everyone.
  const auto flat = route({5.0f, 5.0f, 5.0f, 5.0f}, 4, true);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(flat[static_cast<size_t>(i)].expert, i);
    EXPECT_NEAR(flat[static_cast<size_t>(i)].weight, 0.25f, 1e-6f);
  }
  // Large logits do not overflow (the max is subtracted first).
  const auto big = route({1000.0f, 999.0f, -1000.0f}, 1, true);
  EXPECT_EQ(big[0].expert, 0);
  EXPECT_FLOAT_EQ(big[0].weight, 1.0f);
}

// A stack of n_expert f32 matrices [rows, cols] over `data`.
model::Weight stack(const std::vector<float>& data, int64_t rows, int64_t cols, int64_t n_expert) {
  model::Weight w;
  w.name = "test";
  w.type = DType::F32;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = static_cast<size_t>(cols) * sizeof(float);
  w.data = reinterpret_cast<const std::byte*>(data.data());
  w.n_expert = n_expert;
  return w;
}

TEST(MoeFfn, MatchesPlainPerTokenReference) {
  const int64_t n_embd = 16, n_ff = 8, n_expert = 5, n_used = 2, rows = 7;
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  const auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& f : v) f = dist(rng);
    return v;
  };
  const std::vector<float> gate = random(n_expert * n_ff * n_embd), up = random(n_expert * n_ff * n_embd),
                           down = random(n_expert * n_embd * n_ff), x = random(rows * n_embd),
                           logits = random(rows * n_expert);
  const model::Weight gw = stack(gate, n_ff, n_embd, n_expert), uw = stack(up, n_ff, n_embd, n_expert),
                      dw = stack(down, n_embd, n_ff, n_expert);
  // Expert views: expert e's first element is e matrices further on.
  EXPECT_EQ(reinterpret_cast<const float*>(model::expert(dw, 3).data), down.data() + 3 * n_embd * n_ff);

  cpu::ThreadPool pool(2);
  std::vector<float> got(static_cast<size_t>(rows * n_embd));
  ASSERT_TRUE(cpu::moe_ffn(pool, x.data(), rows, logits.data(), {&gw, &uw, &dw}, n_used, true, got.data()).ok());

  for (int64_t r = 0; r < rows; ++r) {
    const auto choices =
        route(std::vector<float>(logits.begin() + r * n_expert, logits.begin() + (r + 1) * n_expert), n_used, true);
    std::vector<double> want(static_cast<size_t>(n_embd), 0.0);
    for (const ExpertChoice& c : choices) {
      std::vector<double> act(static_cast<size_t>(n_ff));
      for (int64_t j = 0; j < n_ff; ++j) {
        double g = 0.0, u = 0.0;
        for (int64_t k = 0; k < n_embd; ++k) {
          g += gate[static_cast<size_t>((c.expert * n_ff + j) * n_embd + k)] * x[static_cast<size_t>(r * n_embd + k)];
          u += up[static_cast<size_t>((c.expert * n_ff + j) * n_embd + k)] * x[static_cast<size_t>(r * n_embd + k)];
        }
        act[static_cast<size_t>(j)] = g / (1.0 + std::exp(-g)) * u;
      }
      for (int64_t i = 0; i < n_embd; ++i) {
        double d = 0.0;
        for (int64_t j = 0; j < n_ff; ++j)
          d += down[static_cast<size_t>((c.expert * n_embd + i) * n_ff + j)] * act[static_cast<size_t>(j)];
        want[static_cast<size_t>(i)] += c.weight * d;
      }
    }
    for (int64_t i = 0; i < n_embd; ++i) {
      EXPECT_NEAR(got[static_cast<size_t>(r * n_embd + i)], want[static_cast<size_t>(i)], 1e-4) << r << "," << i;
    }
    // One row alone gives the same as within the batch.
    std::vector<float> one(static_cast<size_t>(n_embd));
    ASSERT_TRUE(cpu::moe_ffn(pool, x.data() + r * n_embd, 1, logits.data() + r * n_expert, {&gw, &uw, &dw}, n_used,
                             true, one.data())
                    .ok());
    for (int64_t i = 0; i < n_embd; ++i)
      EXPECT_NEAR(one[static_cast<size_t>(i)], got[static_cast<size_t>(r * n_embd + i)], 1e-6);
  }
}

fs::path moe_dir() { return fs::path(GUFO_TEST_DATA_DIR) / "models" / "tiny-qwen3-moe"; }

std::string convert_moe(const std::string& tag) {
  const fs::path out = testing::process_temp_path("gufo_moe_test_" + tag, ".gguf");
  const std::string command =
      std::string(GUFO_BINARY) + " convert '" + moe_dir().string() + "' -o '" + out.string() + "' --outtype f32";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return out.string();
}

TEST(MoeModel, GreedyMatchesTransformers) {
  std::ifstream in(moe_dir() / "reference" / "greedy.json");
  const nlohmann::json greedy = nlohmann::json::parse(in);
  const auto prompt = greedy.at("prompt_tokens").get<std::vector<int32_t>>();
  const auto expected = greedy.at("new_tokens").get<std::vector<int32_t>>();
  cpu::CpuBackend cpu(2);
  auto model = engine::Model::load(convert_moe("greedy"), cpu);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->hparams().arch, model::Arch::Qwen3Moe);
  EXPECT_EQ((*model)->hparams().n_expert, 8);
  EXPECT_EQ((*model)->hparams().n_expert_used, 2);
  EXPECT_EQ((*model)->hparams().n_ff_exp, 32);
  auto tok = tokenizer::Tokenizer::load((*model)->file());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  auto session = engine::Session::create(**model, cpu, 64, DType::F32);
  ASSERT_TRUE(session.ok());
  engine::GenerateOptions options;
  options.n_predict = static_cast<int32_t>(expected.size());
  options.sampler.temperature = 0.0f;
  auto result = engine::generate(*session, *tok, prompt, options, [](std::string_view) {});
  ASSERT_TRUE(result.ok()) << result.error().message;
  // NOTE(test): none of the reference tokens is an end-of-generation token, so all must come.
  EXPECT_EQ(result->tokens, expected);
}

// Rewrites a good file with `edit` applied to a writer holding its metadata and tensors.
std::string rewrite(const gguf::File& good, const std::string& tag, const std::function<void(gguf::Writer&)>& edit) {
  gguf::Writer writer;
  for (const gguf::MetadataEntry& entry : good.metadata()) writer.set(entry.key, entry.value);
  for (const gguf::TensorInfo& info : good.tensors()) {
    writer.add_tensor({.name = info.name,
                       .type = info.type,
                       .shape = std::vector<uint64_t>(info.shape().begin(), info.shape().end()),
                       .data = info.bytes(),
                       .fill = {}});
  }
  edit(writer);
  const std::string path = testing::process_temp_path("gufo_moe_bad_" + tag, ".gguf").string();
  const Status written = writer.write(path);
  EXPECT_TRUE(written.ok()) << written.error().message;
  return path;
}

// A copy of `from` without metadata `key` and tensor `tensor` (Writer has no removal).
gguf::Writer without(const gguf::Writer& from, const std::string& key, const std::string& tensor) {
  gguf::Writer out;
  for (const auto& [k, value] : from.metadata()) {
    if (k != key) out.set(k, value);
  }
  for (const gguf::TensorSpec& t : from.tensors()) {
    if (t.name != tensor) out.add_tensor(t);
  }
  return out;
}

void expect_load_error(const std::string& path, const std::vector<std::string>& parts) {
  cpu::CpuBackend cpu(1);
  auto model = engine::Model::load(path, cpu);
  ASSERT_FALSE(model.ok()) << path;
  const std::string& message = model.error().message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
  for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(MoeModel, RefusesBadFilesWithOneLine) {
  auto good = gguf::File::open(convert_moe("good"));
  ASSERT_TRUE(good.ok()) << good.error().message;

  expect_load_error(
      rewrite(*good, "used", [](gguf::Writer& w) { w.set("qwen3moe.expert_used_count", gguf::Value::u32(9)); }),
      {"qwen3moe.expert_used_count is 9", "1..8"});
  expect_load_error(rewrite(*good, "zero_ff",
                            [](gguf::Writer& w) { w.set("qwen3moe.expert_feed_forward_length", gguf::Value::u32(0)); }),
                    {"qwen3moe.expert_feed_forward_length is 0"});
  expect_load_error(rewrite(*good, "no_count", [](gguf::Writer& w) { w = without(w, "qwen3moe.expert_count", ""); }),
                    {"qwen3moe.expert_count", "not found"});
  expect_load_error(rewrite(*good, "missing", [](gguf::Writer& w) { w = without(w, "", "blk.1.ffn_up_exps.weight"); }),
                    {"missing tensor 'blk.1.ffn_up_exps.weight'"});

  // Only 4 of the 8 experts stored: the shape names what was expected.
  const gguf::TensorInfo* down = good->find_tensor("blk.0.ffn_down_exps.weight");
  ASSERT_NE(down, nullptr);
  expect_load_error(rewrite(*good, "shape",
                            [&](gguf::Writer& w) {
                              w = without(w, "", down->name);
                              w.add_tensor({.name = down->name,
                                            .type = down->type,
                                            .shape = {down->ne[0], down->ne[1], 4},
                                            .data = down->bytes().first(down->bytes().size() / 2),
                                            .fill = {}});
                            }),
                    {"tensor 'blk.0.ffn_down_exps.weight' must be [32, 64, 8], found [32, 64, 4]"});
  // A dense model's FFN tensor in place of an expert stack.
  const gguf::TensorInfo* gate = good->find_tensor("blk.1.ffn_gate_exps.weight");
  ASSERT_NE(gate, nullptr);
  expect_load_error(rewrite(*good, "flat",
                            [&](gguf::Writer& w) {
                              w = without(w, "", gate->name);
                              w.add_tensor({.name = gate->name,
                                            .type = gate->type,
                                            .shape = {gate->ne[0], gate->ne[1]},
                                            .data = gate->bytes().first(gate->bytes().size() / gate->ne[2]),
                                            .fill = {}});
                            }),
                    {"tensor 'blk.1.ffn_gate_exps.weight' must be [64, 32, 8], found [64, 32, 1]"});
}

}  // namespace
}  // namespace gufo
