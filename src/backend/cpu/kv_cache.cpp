// CpuKvCache (see kv_cache.h).
#include "backend/cpu/kv_cache.h"

#include <cstring>

namespace gufo::cpu {

CpuKvCache::CpuKvCache(const backend::KvCacheSpec& spec)
    : table_(spec), k_(static_cast<size_t>(spec.n_layer) * table_.layer_bytes()), v_(k_.size()) {}

KvView CpuKvCache::view(int32_t seq, int32_t layer) {
  const backend::KvCacheSpec& s = table_.spec();
  const size_t offset = static_cast<size_t>(layer) * table_.layer_bytes();
  return KvView{.type = s.type,
                .k = k_.data() + offset,
                .v = v_.data() + offset,
                .n_embd_kv = s.n_embd_kv,
                .blocks = table_.blocks(seq).data(),
                .block_shift = table_.block_shift()};
}

Status CpuKvCache::copy_layer(int32_t seq, int32_t n, int32_t layer, std::byte* k, std::byte* v, bool into_cache) {
  const size_t row_bytes = static_cast<size_t>(table_.spec().n_embd_kv) * table_.spec().elem_bytes();
  const size_t offset = static_cast<size_t>(layer) * table_.layer_bytes();
  table_.for_each_run(seq, n, [&](int32_t first, int32_t count, int64_t row) {
    std::byte* pool_k = k_.data() + offset + static_cast<size_t>(row) * row_bytes;
    std::byte* pool_v = v_.data() + offset + static_cast<size_t>(row) * row_bytes;
    std::byte* host_k = k + static_cast<size_t>(first) * row_bytes;
    std::byte* host_v = v + static_cast<size_t>(first) * row_bytes;
    const size_t bytes = static_cast<size_t>(count) * row_bytes;
    std::memcpy(into_cache ? pool_k : host_k, into_cache ? host_k : pool_k, bytes);
    std::memcpy(into_cache ? pool_v : host_v, into_cache ? host_v : pool_v, bytes);
  });
  return {};
}

Status CpuKvCache::read_positions(int32_t seq, int32_t n, const LayerSink& sink) {
  return table_.read_layers(
      seq, n,
      [&](int32_t layer, std::byte* k, std::byte* v, bool into) { return copy_layer(seq, n, layer, k, v, into); },
      sink);
}

Status CpuKvCache::write_positions(int32_t seq, int32_t n, const LayerSource& source) {
  return table_.write_layers(
      seq, n,
      [&](int32_t layer, std::byte* k, std::byte* v, bool into) { return copy_layer(seq, n, layer, k, v, into); },
      source);
}

}  // namespace gufo::cpu
