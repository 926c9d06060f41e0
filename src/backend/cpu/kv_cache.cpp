// CpuKvCache (see kv_cache.h).
#include "backend/cpu/kv_cache.h"

namespace gufo::cpu {

CpuKvCache::CpuKvCache(const backend::KvCacheSpec& spec)
    : table_(spec),
      elem_bytes_(spec.type == DType::F32 ? 4 : 2),
      k_(static_cast<size_t>(spec.n_layer * table_.n_blocks() * spec.block_size * spec.n_embd_kv) * elem_bytes_),
      v_(k_.size()) {}

KvView CpuKvCache::view(int32_t seq, int32_t layer) {
  const backend::KvCacheSpec& s = table_.spec();
  const size_t offset = static_cast<size_t>(layer * table_.n_blocks() * s.block_size * s.n_embd_kv) * elem_bytes_;
  return KvView{.type = s.type, .k = k_.data() + offset, .v = v_.data() + offset, .n_embd_kv = s.n_embd_kv,
                .blocks = table_.blocks(seq).data(), .block_shift = table_.block_shift()};
}

}  // namespace gufo::cpu
