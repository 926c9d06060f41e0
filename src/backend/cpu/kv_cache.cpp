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
  table_.for_each_layer_run(seq, n, layer, [&](size_t pool, size_t host, size_t bytes) {
    if (into_cache) {
      std::memcpy(k_.data() + pool, k + host, bytes);
      std::memcpy(v_.data() + pool, v + host, bytes);
    } else {
      std::memcpy(k + host, k_.data() + pool, bytes);
      std::memcpy(v + host, v_.data() + pool, bytes);
    }
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
