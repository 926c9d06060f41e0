// Batch invariance of the CPU backend, model by model: every row of a 70-token prompt gets the
// same logits, bit for bit, whether the prompt runs as one batch, in chunks of 7, 9, 17 and 37
// rows, token by token, or side by side with another sequence in the same batches. The chunk
// sizes cross every path threshold of the matmuls (weight quads and row kernels below 8 rows,
// Q8_0 panels from 8, K-quant panels from 16 on AVX2 and 32 on AVX-512, partial panel row
// groups) and of attention (rows attended one by one below 8 rows a sequence, batched above),
// over every weight type the backend runs (F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K), dense and
// MoE. CMake registers the tests a second time with GUFO_CPU_KERNELS=avx2, so both instruction
// sets meet the promise on an AVX-512 machine. The server's greedy answers rest on this
// (continuous batching, chunked prefill, prefix-cache hits): dot_kernels.h, "Accumulation order".
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/quant/dot_kernels.h"
#include "tests/unit/common/forward_rows.h"
#include "tests/unit/common/temp_path.h"
#include "tests/unit/common/tiny_model.h"

namespace gufo {
namespace {

constexpr int32_t kPromptTokens = 70;

// The prompt of sequence `seq` in batches of the given sizes (summing to the prompt's length),
// each batch also carrying the same positions of sequence `beside` when it is >= 0: the logits
// of `seq`'s rows in prompt order.
std::vector<float> run_in_chunks(const engine::Model& model, backend::Backend& backend, backend::KvCache& cache,
                                 const std::vector<int>& sizes, int32_t seq, int32_t beside = -1) {
  const std::vector<int32_t> tokens = testing::prompt_tokens(kPromptTokens);
  const size_t n_vocab = static_cast<size_t>(model.hparams().n_vocab);
  std::vector<float> logits;
  int32_t start = 0;
  for (int size : sizes) {
    std::vector<testing::BatchRow> rows;
    for (int32_t p = start; p < start + size; ++p) {
      // The other sequence's rows first, so that `seq`'s rows are not at the batch's front.
      if (beside >= 0) rows.push_back({tokens[static_cast<size_t>(kPromptTokens - 1 - p)], p, beside});
    }
    for (int32_t p = start; p < start + size; ++p) rows.push_back({tokens[static_cast<size_t>(p)], p, seq});
    const std::vector<float> batch = testing::forward_rows(model, backend, cache, rows);
    const size_t first = beside >= 0 ? static_cast<size_t>(size) * n_vocab : 0;
    logits.insert(logits.end(), batch.begin() + static_cast<std::ptrdiff_t>(first), batch.end());
    start += size;
  }
  return logits;
}

// The number of logits rows in which `got` differs from `want` in any bit.
int rows_differing(const std::vector<float>& got, const std::vector<float>& want, size_t n_vocab) {
  if (got.size() != want.size()) return -1;
  int differing = 0;
  for (size_t r = 0; r * n_vocab < got.size(); ++r) {
    differing += std::memcmp(got.data() + r * n_vocab, want.data() + r * n_vocab, n_vocab * sizeof(float)) != 0;
  }
  return differing;
}

void expect_invariant(const std::string& what, cpu::CpuBackend& cpu, const engine::Model& model) {
  const backend::KvCacheSpec spec{.n_layer = model.hparams().n_layer,
                                  .n_embd_kv = model.hparams().n_embd_kv(),
                                  .n_ctx = 128,
                                  .n_seq = 5,
                                  .type = DType::F16,
                                  .block_size = 16,
                                  .n_blocks = 0};
  auto cache = cpu.create_kv_cache(spec);
  ASSERT_TRUE(cache.ok()) << cache.error().message;
  const size_t n_vocab = static_cast<size_t>(model.hparams().n_vocab);
  const std::vector<float> whole = run_in_chunks(model, cpu, **cache, {kPromptTokens}, 0);
  const std::vector<float> chunks = run_in_chunks(model, cpu, **cache, {7, 9, 17, 37}, 1);
  const std::vector<float> singly = run_in_chunks(model, cpu, **cache, std::vector<int>(kPromptTokens, 1), 2);
  const std::vector<float> beside = run_in_chunks(model, cpu, **cache, {3, 30, 37}, 3, 4);
  EXPECT_EQ(rows_differing(chunks, whole, n_vocab), 0) << what << ": chunks of 7, 9, 17, 37 vs one batch";
  EXPECT_EQ(rows_differing(singly, whole, n_vocab), 0) << what << ": token by token vs one batch";
  EXPECT_EQ(rows_differing(beside, whole, n_vocab), 0) << what << ": beside another sequence vs alone";
}

// The kernel set the backend runs: GUFO_CPU_KERNELS caps it (the second registration of
// these tests asks for avx2); a test that meant AVX2 must not silently run AVX-512.
TEST(BatchInvariance, RunsTheKernelSetAskedFor) {
  testing::TinyModel tiny("tiny-qwen3", "q8_0");
  const std::string device = tiny.cpu.capabilities().device;
  const char* asked = std::getenv("GUFO_CPU_KERNELS");
  const cpu::fast::CpuFeatures& features = cpu::fast::detected_cpu_features();
  if (asked != nullptr && std::string(asked) == "avx2" && cpu::fast::avx2_dot_kernels(features) != nullptr) {
    EXPECT_NE(device.find("avx2 kernels"), std::string::npos) << device;
  } else if (asked == nullptr) {  // uncapped: the best set this CPU has
    const std::string best = std::string(cpu::fast::best_dot_kernels(features).name) + " kernels";
    EXPECT_NE(device.find(best), std::string::npos) << device;
  }
  std::cout << "kernel set: " << device << "\n";
}

TEST(BatchInvariance, TinyDenseModelsInEveryFloatTypeAndQ8_0) {
  for (const char* type : {"f32", "f16", "bf16", "q8_0"}) {
    testing::TinyModel tiny("tiny-qwen3", type);
    ASSERT_NE(tiny.model, nullptr) << type;
    expect_invariant(std::string("tiny-qwen3 ") + type, tiny.cpu, *tiny.model);
  }
}

TEST(BatchInvariance, TinyMoeModel) {
  testing::TinyModel tiny("tiny-qwen3-moe", "q8_0");
  ASSERT_NE(tiny.model, nullptr);
  expect_invariant("tiny-qwen3-moe q8_0", tiny.cpu, *tiny.model);
}

// The shipped 512-wide model (K-quant blocks need rows of 256) re-encoded by `gufo quantize`
// into each K-quant mix: Q4_K with Q6_K, Q5_K with Q6_K, Q6_K alone.
TEST(BatchInvariance, KQuantMixesOfTheShippedModel) {
  const std::string source = std::string(GUFO_TEST_DATA_DIR) + "/../../models/gufo-tiny-q8_0.gguf";
  for (const char* mix : {"q4_k_m", "q5_k_m", "q6_k"}) {
    const std::string path = testing::process_temp_path(std::string("gufo_invariance_") + mix, ".gguf").string();
    const std::string command =
        std::string(GUFO_BINARY) + " quantize '" + source + "' '" + path + "' " + mix + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    cpu::CpuBackend cpu(2);
    auto model = engine::Model::load(path, cpu);
    ASSERT_TRUE(model.ok()) << model.error().message;
    expect_invariant(std::string("gufo-tiny ") + mix, cpu, **model);
  }
}

}  // namespace
}  // namespace gufo
