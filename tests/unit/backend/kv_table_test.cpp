// The KV-cache rules every backend shares (backend/kv_table.h): spec checks, contiguous and
// paged tables, the no-gap rule, capacity, truncation and the table version.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "backend/kv_table.h"

namespace gufo::backend {
namespace {

KvCacheSpec spec(int64_t n_seq, int64_t n_blocks) {
  return {.n_layer = 2,
          .n_embd_kv = 8,
          .n_ctx = 40,
          .n_seq = n_seq,
          .type = DType::F16,
          .block_size = 16,
          .n_blocks = n_blocks};
}

Batch rows(std::vector<int32_t> positions, std::vector<int32_t> seqs) {
  Batch b;
  b.positions = std::move(positions);
  b.seq_ids = std::move(seqs);
  b.tokens.assign(b.positions.size(), 1);
  return b;
}

TEST(KvTable, ValidatesSpecs) {
  EXPECT_TRUE(KvTable::validate(spec(2, 0)).ok());
  KvCacheSpec bad = spec(2, 0);
  bad.block_size = 12;
  EXPECT_NE(KvTable::validate(bad).error().message.find("power of two"), std::string::npos);
  bad = spec(2, 0);
  bad.type = DType::Q8_0;
  EXPECT_NE(KvTable::validate(bad).error().message.find("supported: f16, f32"), std::string::npos);
  bad = spec(0, 0);
  EXPECT_FALSE(KvTable::validate(bad).ok());
  EXPECT_EQ(spec(1, 0).bytes_per_token(), 2u * 2 * 8 * 2);
}

TEST(KvTable, ContiguousTablesAndTheNoGapRule) {
  KvTable table(spec(2, 0));
  EXPECT_EQ(table.n_blocks(), 6);  // ceil(40 / 16) = 3 per sequence
  EXPECT_EQ(table.blocks(1), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(table.capacity(0), 48);
  auto filled = table.fill_after(rows({0, 1, 2, 0}, {0, 0, 0, 1}));
  ASSERT_TRUE(filled.ok());
  EXPECT_EQ(*filled, (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(table.filled(0), 0);  // nothing changes before commit
  table.commit(*filled);
  EXPECT_EQ(table.filled(0), 3);
  auto gap = table.fill_after(rows({5}, {0}));
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.error().message.find("skips from position 3 to 5"), std::string::npos);
  // Padding rows are ignored; rewriting an earlier position truncates there.
  auto padded = table.fill_after(rows({0, 1}, {kPaddingSeq, 0}));
  ASSERT_TRUE(padded.ok());
  EXPECT_EQ((*padded)[0], 2);
  table.truncate(0, 1);
  EXPECT_EQ(table.filled(0), 1);
  table.truncate(0, 7);  // never raises
  EXPECT_EQ(table.filled(0), 1);
}

TEST(KvTable, PagedTablesCapacityAndVersion) {
  KvTable table(spec(2, 8));
  EXPECT_EQ(table.capacity(0), 0);
  EXPECT_FALSE(table.fill_after(rows({0}, {0})).ok());  // no blocks yet
  const uint64_t v0 = table.tables_version();
  ASSERT_TRUE(table.set_blocks(0, std::vector<int32_t>{7, 2}, 0).ok());
  EXPECT_GT(table.tables_version(), v0);
  const uint64_t v1 = table.tables_version();
  ASSERT_TRUE(table.set_blocks(0, std::vector<int32_t>{7, 2}, 16).ok());  // the same table: no new version
  EXPECT_EQ(table.tables_version(), v1);
  EXPECT_EQ(table.filled(0), 16);
  ASSERT_TRUE(table.set_blocks(0, std::vector<int32_t>{7, 2}, 32).ok());
  auto past = table.fill_after(rows({31, 32}, {0, 0}));
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find("past its 32 cache positions"), std::string::npos);
  EXPECT_NE(table.set_blocks(0, std::vector<int32_t>{8}, 0).error().message.find("outside the pool"),
            std::string::npos);
  EXPECT_NE(table.set_blocks(0, std::vector<int32_t>{1}, 17).error().message.find("do not fit"), std::string::npos);
  EXPECT_NE(table.set_blocks(2, std::vector<int32_t>{1}, 0).error().message.find("out of range"), std::string::npos);
  KvTable contiguous(spec(1, 0));
  EXPECT_FALSE(contiguous.set_blocks(0, std::vector<int32_t>{0}, 0).ok());
}

// Saving a sequence walks its positions in runs that lie together in the pool: adjacent
// blocks merge, a jump starts a new run.
TEST(KvTable, TransfersWalkRunsOfAdjacentBlocks) {
  KvTable table(spec(2, 8));
  ASSERT_TRUE(table.set_blocks(0, std::vector<int32_t>{3, 4, 1, 2}, 0).ok());
  std::vector<std::tuple<int32_t, int32_t, int64_t>> runs;
  table.for_each_run(0, 50, [&](int32_t first, int32_t count, int64_t row) { runs.emplace_back(first, count, row); });
  const std::vector<std::tuple<int32_t, int32_t, int64_t>> expected = {{0, 32, 48}, {32, 18, 16}};
  EXPECT_EQ(runs, expected);
  runs.clear();
  table.for_each_run(0, 0, [&](int32_t first, int32_t count, int64_t row) { runs.emplace_back(first, count, row); });
  EXPECT_TRUE(runs.empty());
  // Reading stops at the fill level, writing at the blocks.
  EXPECT_NE(table.check_transfer(0, 1, /*write=*/false).error().message.find("it holds 0"), std::string::npos);
  EXPECT_TRUE(table.check_transfer(0, 64, /*write=*/true).ok());
  EXPECT_NE(table.check_transfer(0, 65, /*write=*/true).error().message.find("its blocks hold 64"), std::string::npos);
  EXPECT_FALSE(table.check_transfer(2, 1, /*write=*/true).ok());
  ASSERT_TRUE(table.set_blocks(0, std::vector<int32_t>{3, 4, 1, 2}, 20).ok());
  EXPECT_TRUE(table.check_transfer(0, 20, /*write=*/false).ok());
  EXPECT_FALSE(table.check_transfer(0, 21, /*write=*/false).ok());
}

TEST(KvPool, SizedFromFreeMemory) {
  const KvCacheSpec s = spec(1, 0);  // 64 bytes per token
  EXPECT_EQ(kv_pool_tokens(s, {.free_bytes = 64 * 1000 + 100, .total_bytes = 0}, 100, 1.0, 1 << 20), 1000);
  EXPECT_EQ(kv_pool_tokens(s, {.free_bytes = 64 * 1000, .total_bytes = 0}, 0, 0.5, 1 << 20), 500);
  EXPECT_EQ(kv_pool_tokens(s, {.free_bytes = 64 * 1000, .total_bytes = 0}, 0, 1.0, 10), 10);
  EXPECT_EQ(kv_pool_tokens(s, {.free_bytes = 50, .total_bytes = 0}, 100, 1.0, 10), 0);
}

}  // namespace
}  // namespace gufo::backend
