// The CPU backend's KV cache: a pool of blocks in host memory (F16 or F32), per layer K and V
// as [n_blocks * block_size, n_embd_kv], and per sequence a block table and a fill level.
// Contiguous specs (n_blocks = 0) give each sequence its own blocks in order; paged specs let
// the caller assign blocks (backend.h, KvCache::set_blocks). Tested by
// tests/unit/backend/kv_cache_test.cpp and, through forward(), tests/unit/model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/ops/ops.h"

namespace gufo::cpu {

class CpuKvCache final : public backend::KvCache {
 public:
  // The spec must have been checked by validate() first.
  explicit CpuKvCache(const backend::KvCacheSpec& spec);
  static Status validate(const backend::KvCacheSpec& spec);

  const backend::KvCacheSpec& spec() const override { return spec_; }
  void truncate(int32_t seq, int32_t from) override;
  Status set_blocks(int32_t seq, std::span<const int32_t> blocks, int32_t n_filled) override;

  // Positions sequence `seq` can hold with its current blocks.
  int64_t capacity(int32_t seq) const {
    return static_cast<int64_t>(tables_[static_cast<size_t>(seq)].size()) * spec_.block_size;
  }
  KvView view(int32_t seq, int32_t layer);
  std::vector<int32_t>& filled() { return filled_; }

 private:
  backend::KvCacheSpec spec_;
  int64_t n_blocks_;
  int32_t block_shift_;
  size_t elem_bytes_;
  std::vector<std::byte> k_;
  std::vector<std::byte> v_;
  std::vector<std::vector<int32_t>> tables_;  // per sequence: block ids, position order
  std::vector<int32_t> filled_;               // per sequence: positions 0..filled-1 are valid
};

}  // namespace gufo::cpu
