// The paged KV cache on the CPU backend: a sequence whose positions live in scattered blocks
// gives exactly the logits of the contiguous cache, and a sequence that starts from another
// sequence's filled prefix blocks (what the prefix cache does) gives exactly the logits of
// evaluating the whole prompt itself. Bad block tables are refused. (The same numbers in any
// batch: batch_invariance_test.cpp.)
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "backend/backend.h"
#include "tests/unit/common/forward_rows.h"
#include "tests/unit/common/tiny_model.h"

namespace gufo {
namespace {

using testing::prompt_tokens;

// The logits of `tokens` of sequence `seq` from position `start` on, in one batch.
std::vector<float> run(const engine::Model& model, backend::Backend& backend, backend::KvCache& cache,
                       const std::vector<int32_t>& tokens, int32_t start, int32_t seq) {
  std::vector<testing::BatchRow> rows;
  for (size_t i = 0; i < tokens.size(); ++i) rows.push_back({tokens[i], start + static_cast<int32_t>(i), seq});
  return testing::forward_rows(model, backend, cache, rows);
}

backend::KvCacheSpec spec_of(const engine::Model& model, int64_t n_seq, int64_t n_blocks) {
  return {.n_layer = model.hparams().n_layer,
          .n_embd_kv = model.hparams().n_embd_kv(),
          .n_ctx = 64,
          .n_seq = n_seq,
          .type = DType::F32,
          .block_size = 4,
          .n_blocks = n_blocks};
}

TEST(PagedKvCache, ScatteredBlocksGiveTheContiguousLogits) {
  testing::TinyModel tiny("tiny-qwen3");
  ASSERT_NE(tiny.model, nullptr);
  const std::vector<int32_t> tokens = prompt_tokens(23);  // 6 blocks of 4, the last one partial
  auto contiguous = tiny.cpu.create_kv_cache(spec_of(*tiny.model, 1, 0));
  ASSERT_TRUE(contiguous.ok());
  // Prefill in two batches so the second reads keys the first wrote.
  std::vector<int32_t> head(tokens.begin(), tokens.begin() + 13);
  std::vector<int32_t> tail(tokens.begin() + 13, tokens.end());
  const std::vector<float> want_head = run(*tiny.model, tiny.cpu, **contiguous, head, 0, 0);
  const std::vector<float> want_tail = run(*tiny.model, tiny.cpu, **contiguous, tail, 13, 0);

  auto paged = tiny.cpu.create_kv_cache(spec_of(*tiny.model, 2, 16));
  ASSERT_TRUE(paged.ok());
  const std::vector<int32_t> scattered = {9, 2, 14, 0, 7, 11};
  ASSERT_TRUE((*paged)->set_blocks(1, scattered, 0).ok());
  EXPECT_EQ(run(*tiny.model, tiny.cpu, **paged, head, 0, 1), want_head);
  EXPECT_EQ(run(*tiny.model, tiny.cpu, **paged, tail, 13, 1), want_tail);
}

TEST(PagedKvCache, SharedPrefixBlocksGiveTheLogitsOfAFullEvaluation) {
  testing::TinyModel tiny("tiny-qwen3");
  ASSERT_NE(tiny.model, nullptr);
  std::vector<int32_t> tokens = prompt_tokens(20);
  auto cache = tiny.cpu.create_kv_cache(spec_of(*tiny.model, 2, 16));
  ASSERT_TRUE(cache.ok());
  // Sequence 0 evaluates all 20 tokens in blocks 3, 4, 5, 6, 8.
  ASSERT_TRUE((*cache)->set_blocks(0, std::vector<int32_t>{3, 4, 5, 6, 8}, 0).ok());
  const std::vector<float> whole = run(*tiny.model, tiny.cpu, **cache, tokens, 0, 0);
  // Sequence 1 shares the first three blocks (12 positions) and evaluates the rest itself.
  ASSERT_TRUE((*cache)->set_blocks(1, std::vector<int32_t>{3, 4, 5, 10, 12}, 12).ok());
  const std::vector<int32_t> rest(tokens.begin() + 12, tokens.end());
  const std::vector<float> continued = run(*tiny.model, tiny.cpu, **cache, rest, 12, 1);
  const size_t n_vocab = static_cast<size_t>(tiny.model->hparams().n_vocab);
  const std::vector<float> want(whole.begin() + 12 * static_cast<std::ptrdiff_t>(n_vocab), whole.end());
  ASSERT_EQ(continued.size(), want.size());
  // The same keys and values; only how the rows were batched differs, which changes no bit.
  EXPECT_EQ(continued, want);
}

TEST(PagedKvCache, RefusesBadTablesAndPositionsPastTheBlocks) {
  testing::TinyModel tiny("tiny-qwen3");
  ASSERT_NE(tiny.model, nullptr);
  auto contiguous = tiny.cpu.create_kv_cache(spec_of(*tiny.model, 1, 0));
  ASSERT_TRUE(contiguous.ok());
  EXPECT_FALSE((*contiguous)->set_blocks(0, std::vector<int32_t>{0}, 0).ok());
  auto paged = tiny.cpu.create_kv_cache(spec_of(*tiny.model, 1, 4));
  ASSERT_TRUE(paged.ok());
  EXPECT_FALSE((*paged)->set_blocks(0, std::vector<int32_t>{4}, 0).ok());  // outside the pool
  EXPECT_FALSE((*paged)->set_blocks(1, std::vector<int32_t>{0}, 0).ok());  // no such sequence
  EXPECT_FALSE((*paged)->set_blocks(0, std::vector<int32_t>{0}, 5).ok());  // more filled than held
  ASSERT_TRUE((*paged)->set_blocks(0, std::vector<int32_t>{1}, 0).ok());
  backend::Batch batch = backend::Batch::sequence(prompt_tokens(5), 0, false);  // 5 positions, 4 held
  auto graph = tiny.model->build_graph({.n_tokens = 5, .n_outputs = 1});
  ASSERT_TRUE(graph.ok());
  std::vector<float> logits(static_cast<size_t>(tiny.model->hparams().n_vocab));
  const Status status = tiny.cpu.forward(*graph, batch, **paged, {.logits = logits, .argmax = {}});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("past its 4 cache positions"), std::string::npos) << status.error().message;
  auto bad_block = tiny.cpu.create_kv_cache(
      {.n_layer = 1, .n_embd_kv = 8, .n_ctx = 8, .n_seq = 1, .type = DType::F32, .block_size = 6, .n_blocks = 0});
  EXPECT_FALSE(bad_block.ok());
}

}  // namespace
}  // namespace gufo
