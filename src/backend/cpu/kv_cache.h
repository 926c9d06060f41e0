// The CPU backend's KV cache: a pool of blocks in host memory (F16 or F32), per layer K and V
// as [n_blocks * block_size, n_embd_kv]; the block tables and fill levels are a KvTable
// (backend/kv_table.h), whose rules every backend shares. Tested by
// tests/unit/backend/kv_table_test.cpp and, through forward(), tests/unit/model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/ops/ops.h"
#include "backend/kv_table.h"

namespace gufo::cpu {

class CpuKvCache final : public backend::KvCache {
 public:
  // The spec must have been checked by backend::KvTable::validate() first.
  explicit CpuKvCache(const backend::KvCacheSpec& spec);

  const backend::KvCacheSpec& spec() const override { return table_.spec(); }
  void truncate(int32_t seq, int32_t from) override { table_.truncate(seq, from); }
  Status set_blocks(int32_t seq, std::span<const int32_t> blocks, int32_t n_filled) override {
    return table_.set_blocks(seq, blocks, n_filled);
  }

  Status read_positions(int32_t seq, int32_t n, const LayerSink& sink) override;
  Status write_positions(int32_t seq, int32_t n, const LayerSource& source) override;

  backend::KvTable& table() { return table_; }
  KvView view(int32_t seq, int32_t layer);

 private:
  // Copies positions [0, n) of `seq` of one layer between the pools and host k, v.
  Status copy_layer(int32_t seq, int32_t n, int32_t layer, std::byte* k, std::byte* v, bool into_cache);

  backend::KvTable table_;
  std::vector<std::byte> k_;
  std::vector<std::byte> v_;
};

}  // namespace gufo::cpu
