// Saving and restoring a sequence's keys and values (KvCache::read_positions and
// write_positions) on the CPU backend's cache, paged and not: what goes in comes back out
// through any block table, a partial restore leaves nothing behind, and out-of-range
// transfers are errors. (The CUDA cache's twin check runs in tests/gpu.)
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/registry.h"

namespace gufo::backend {
namespace {

std::unique_ptr<Backend> cpu_backend() {
  auto created = create_backend({.device = {.kind = DeviceChoice::Kind::Cpu, .index = 0}, .threads = 1, .faults = {}});
  EXPECT_TRUE(created.ok());
  return std::move(created->backend);
}

// Distinct bytes for every layer, key or value, and offset.
std::byte pattern(int32_t layer, int which, size_t i) {
  return static_cast<std::byte>((layer * 31 + which * 7 + i) & 0xff);
}

KvCache::LayerSource fill_with_pattern() {
  return [](int32_t layer, std::span<std::byte> k, std::span<std::byte> v) -> Status {
    for (size_t i = 0; i < k.size(); ++i) k[i] = pattern(layer, 0, i);
    for (size_t i = 0; i < v.size(); ++i) v[i] = pattern(layer, 1, i);
    return {};
  };
}

// Every layer read back equals the pattern; returns the layers seen.
int32_t expect_pattern(KvCache& cache, int32_t seq, int32_t n) {
  int32_t layers = 0;
  const Status read = cache.read_positions(
      seq, n, [&](int32_t layer, std::span<const std::byte> k, std::span<const std::byte> v) -> Status {
        EXPECT_EQ(layer, layers);
        const size_t bytes = static_cast<size_t>(n) * cache.spec().n_embd_kv * cache.spec().elem_bytes();
        EXPECT_EQ(k.size(), bytes);
        EXPECT_EQ(v.size(), bytes);
        for (size_t i = 0; i < k.size() && i < v.size(); ++i) {
          if (k[i] != pattern(layer, 0, i) || v[i] != pattern(layer, 1, i)) {
            ADD_FAILURE() << "layer " << layer << " byte " << i;
            break;
          }
        }
        ++layers;
        return {};
      });
  EXPECT_TRUE(read.ok()) << read.error().message;
  return layers;
}

TEST(KvTransfer, ARestoredSequenceReadsBackThroughAnyBlockTable) {
  const std::unique_ptr<Backend> backend = cpu_backend();
  for (const DType type : {DType::F16, DType::F32}) {
    // Unpaged: sequence 1 owns the second half of the pool.
    auto flat = backend->create_kv_cache(
        {.n_layer = 3, .n_embd_kv = 12, .n_ctx = 40, .n_seq = 2, .type = type, .block_size = 16, .n_blocks = 0});
    ASSERT_TRUE(flat.ok());
    ASSERT_TRUE((*flat)->write_positions(1, 37, fill_with_pattern()).ok());
    EXPECT_EQ(expect_pattern(**flat, 1, 37), 3);
    // Paged: written through one scrambled table, read through another sequence sharing it.
    auto paged = backend->create_kv_cache(
        {.n_layer = 3, .n_embd_kv = 12, .n_ctx = 64, .n_seq = 2, .type = type, .block_size = 16, .n_blocks = 8});
    ASSERT_TRUE(paged.ok());
    const std::vector<int32_t> blocks = {5, 6, 0, 3};
    ASSERT_TRUE((*paged)->set_blocks(0, blocks, 0).ok());
    ASSERT_TRUE((*paged)->write_positions(0, 50, fill_with_pattern()).ok());
    ASSERT_TRUE((*paged)->set_blocks(1, blocks, 50).ok());
    EXPECT_EQ(expect_pattern(**paged, 1, 50), 3);
  }
}

TEST(KvTransfer, AFailedRestoreLeavesTheSequenceEmptyAndRangesAreChecked) {
  const std::unique_ptr<Backend> backend = cpu_backend();
  auto cache = backend->create_kv_cache(
      {.n_layer = 3, .n_embd_kv = 8, .n_ctx = 32, .n_seq = 1, .type = DType::F16, .block_size = 16, .n_blocks = 0});
  ASSERT_TRUE(cache.ok());
  KvCache& kv = **cache;
  ASSERT_TRUE(kv.write_positions(0, 20, fill_with_pattern()).ok());
  const Status failed = kv.write_positions(0, 10, [](int32_t layer, std::span<std::byte>, std::span<std::byte>) {
    return layer == 1 ? Status(Error{"short file"}) : Status();
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "short file");
  const auto nothing = [](int32_t, std::span<const std::byte>, std::span<const std::byte>) { return Status(); };
  EXPECT_FALSE(kv.read_positions(0, 1, nothing).ok());  // nothing half-restored is left to attend
  EXPECT_FALSE(kv.write_positions(0, 33, fill_with_pattern()).ok());
  EXPECT_FALSE(kv.write_positions(1, 1, fill_with_pattern()).ok());
  EXPECT_TRUE(kv.write_positions(0, 32, fill_with_pattern()).ok());
  EXPECT_EQ(expect_pattern(kv, 0, 32), 3);
}

}  // namespace
}  // namespace gufo::backend
