// The CUDA backend's KV cache: per layer K and V pools in device memory (f16 or f32, zeroed
// at creation), [n_blocks * block_size, n_embd_kv] each, and a device copy of the block
// tables, re-uploaded when a table changed. The bookkeeping is backend::KvTable's, shared
// with the CPU backend. Tested by tests/gpu (through forward).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/ops/ops.h"
#include "backend/kv_table.h"

namespace gufo::cuda {

class CudaKvCache final : public backend::KvCache {
 public:
  // The spec must have passed backend::KvTable::validate().
  static Result<std::unique_ptr<CudaKvCache>> create(const backend::KvCacheSpec& spec, gpu::stream_t stream);

  const backend::KvCacheSpec& spec() const override { return table_.spec(); }
  void truncate(int32_t seq, int32_t from) override { table_.truncate(seq, from); }
  Status set_blocks(int32_t seq, std::span<const int32_t> blocks, int32_t n_filled) override {
    return table_.set_blocks(seq, blocks, n_filled);
  }

  // Through host memory, on the stream the forwards run on (synchronized).
  Status read_positions(int32_t seq, int32_t n, const LayerSink& sink) override;
  Status write_positions(int32_t seq, int32_t n, const LayerSource& source) override;

  backend::KvTable& table() { return table_; }
  // Unique over the process: a captured CUDA graph is keyed by it, never by the address of a
  // cache, which a later cache can reuse with other device buffers.
  uint64_t id() const { return id_; }
  // Uploads the block tables if they changed since the last upload.
  Status sync_tables(gpu::stream_t stream);
  KvLayer layer(int64_t layer) const;

 private:
  CudaKvCache(const backend::KvCacheSpec& spec, gpu::stream_t stream);
  // Copies positions [0, n) of `seq` of one layer between the pools and host k, v.
  Status copy_layer(int32_t seq, int32_t n, int32_t layer, std::byte* k, std::byte* v, bool into_cache);

  uint64_t id_;
  gpu::stream_t stream_;
  backend::KvTable table_;
  DeviceMemory k_;
  DeviceMemory v_;
  DeviceMemory tables_;       // [n_seq, table_stride] int32
  int64_t table_stride_ = 0;  // blocks a sequence's n_ctx positions span
  uint64_t uploaded_version_ = UINT64_MAX;
  std::vector<int32_t> host_tables_;
};

}  // namespace gufo::cuda
