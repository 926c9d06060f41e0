// CpuKvCache (see kv_cache.h).
#include "backend/cpu/kv_cache.h"

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

}  // namespace gufo::cpu
