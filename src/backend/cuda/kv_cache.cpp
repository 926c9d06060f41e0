// CudaKvCache (see kv_cache.h).
#include "backend/cuda/kv_cache.h"

#include <algorithm>
#include <atomic>

#include "backend/cuda/check.cuh"

namespace gufo::cuda {

CudaKvCache::CudaKvCache(const backend::KvCacheSpec& spec, gpu::stream_t stream) : stream_(stream), table_(spec) {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id.fetch_add(1);
}

Result<std::unique_ptr<CudaKvCache>> CudaKvCache::create(const backend::KvCacheSpec& spec, gpu::stream_t stream) {
  std::unique_ptr<CudaKvCache> cache(new CudaKvCache(spec, stream));
  const size_t pool_bytes = static_cast<size_t>(spec.n_layer) * cache->table_.layer_bytes();
  GUFO_ASSIGN_OR_RETURN(cache->k_, DeviceMemory::allocate(pool_bytes, "KV cache (keys)"));
  GUFO_ASSIGN_OR_RETURN(cache->v_, DeviceMemory::allocate(pool_bytes, "KV cache (values)"));
  cache->table_stride_ = (spec.n_ctx + spec.block_size - 1) / spec.block_size;
  cache->host_tables_.assign(static_cast<size_t>(spec.n_seq * cache->table_stride_), 0);
  GUFO_ASSIGN_OR_RETURN(cache->tables_,
                        DeviceMemory::allocate(cache->host_tables_.size() * sizeof(int32_t), "KV block tables"));
  // NOTE(kv_cache): zeroed so that no position ever holds a NaN pattern from an earlier user
  // of the memory (attention reads only written positions, but a zero pool costs nothing).
  GUFO_GPU_RETURN_IF_ERROR(gpu::memset_async(cache->k_.get(), 0, pool_bytes, stream), "KV cache");
  GUFO_GPU_RETURN_IF_ERROR(gpu::memset_async(cache->v_.get(), 0, pool_bytes, stream), "KV cache");
  GUFO_RETURN_IF_ERROR(cache->sync_tables(stream));
  return cache;
}

Status CudaKvCache::sync_tables(gpu::stream_t stream) {
  if (table_.tables_version() == uploaded_version_) return {};
  for (int64_t seq = 0; seq < table_.spec().n_seq; ++seq) {
    const std::vector<int32_t>& blocks = table_.blocks(static_cast<int32_t>(seq));
    const int64_t n = std::min<int64_t>(table_stride_, static_cast<int64_t>(blocks.size()));
    int32_t* row = host_tables_.data() + seq * table_stride_;
    std::copy_n(blocks.begin(), n, row);
    std::fill(row + n, row + table_stride_, 0);
  }
  // A synchronous copy: the host array is rewritten by the next change.
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream), "KV block tables");
  GUFO_GPU_RETURN_IF_ERROR(
      gpu::copy_to_device(tables_.get(), host_tables_.data(), host_tables_.size() * sizeof(int32_t)),
      "KV block tables");
  uploaded_version_ = table_.tables_version();
  return {};
}

KvLayer CudaKvCache::layer(int64_t layer) const {
  const backend::KvCacheSpec& s = table_.spec();
  const size_t offset = static_cast<size_t>(layer) * table_.layer_bytes();
  KvLayer kv;
  kv.k = k_.get<std::byte>() + offset;
  kv.v = v_.get<std::byte>() + offset;
  kv.f16 = s.type != DType::F32;
  kv.n_embd_kv = s.n_embd_kv;
  kv.block_shift = table_.block_shift();
  kv.tables = tables_.get<int32_t>();
  kv.table_stride = table_stride_;
  return kv;
}

Status CudaKvCache::copy_layer(int32_t seq, int32_t n, int32_t layer, std::byte* k, std::byte* v, bool into_cache) {
  gpu::error_t error = gpu::success;
  table_.for_each_layer_run(seq, n, layer, [&](size_t pool, size_t host, size_t bytes) {
    for (const auto& [device, host_side] :
         {std::pair{k_.get<std::byte>() + pool, k + host}, std::pair{v_.get<std::byte>() + pool, v + host}}) {
      if (error != gpu::success) return;
      error = into_cache ? gpu::copy_to_device_async(device, host_side, bytes, stream_)
                         : gpu::copy_to_host_async(host_side, device, bytes, stream_);
    }
  });
  // Synchronized whatever happened: the host buffers must outlive every copy queued.
  const gpu::error_t synced = gpu::stream_synchronize(stream_);
  GUFO_GPU_RETURN_IF_ERROR(error != gpu::success ? error : synced, "KV cache copy");
  return {};
}

Status CudaKvCache::read_positions(int32_t seq, int32_t n, const LayerSink& sink) {
  return table_.read_layers(
      seq, n,
      [&](int32_t layer, std::byte* k, std::byte* v, bool into) { return copy_layer(seq, n, layer, k, v, into); },
      sink);
}

Status CudaKvCache::write_positions(int32_t seq, int32_t n, const LayerSource& source) {
  return table_.write_layers(
      seq, n,
      [&](int32_t layer, std::byte* k, std::byte* v, bool into) { return copy_layer(seq, n, layer, k, v, into); },
      source);
}

}  // namespace gufo::cuda
