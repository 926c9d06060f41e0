// KvTable (see kv_table.h).
#include "backend/kv_table.h"

#include <algorithm>
#include <bit>
#include <string>

namespace gufo::backend {

namespace {

int64_t blocks_per_sequence(const KvCacheSpec& spec) { return (spec.n_ctx + spec.block_size - 1) / spec.block_size; }

}  // namespace

uint64_t KvCacheSpec::bytes_per_token() const {
  return 2 * static_cast<uint64_t>(n_layer) * static_cast<uint64_t>(n_embd_kv) * elem_bytes();
}

Status KvTable::validate(const KvCacheSpec& spec) {
  if (spec.type != DType::F16 && spec.type != DType::F32) {
    return Error{"KV cache type " + std::string(dtype_name(spec.type)) + " (supported: f16, f32)"};
  }
  if (spec.n_layer < 1 || spec.n_embd_kv < 1 || spec.n_ctx < 1 || spec.n_seq < 1) {
    return Error{"KV cache needs positive layers, width, context and sequences"};
  }
  if (spec.block_size < 1 || spec.block_size > (1 << 16) ||
      !std::has_single_bit(static_cast<uint64_t>(spec.block_size))) {
    return Error{"KV cache block size " + std::to_string(spec.block_size) + " is not a power of two up to 65536"};
  }
  if (spec.n_blocks < 0 || spec.n_blocks > (int64_t{1} << 30)) {
    return Error{"KV cache of " + std::to_string(spec.n_blocks) + " blocks"};
  }
  if (spec.n_blocks == 0 && spec.n_seq * blocks_per_sequence(spec) > (int64_t{1} << 30)) {
    return Error{"KV cache of " + std::to_string(spec.n_seq) + " sequences x " + std::to_string(spec.n_ctx) +
                 " positions is too large"};
  }
  return {};
}

KvTable::KvTable(const KvCacheSpec& spec)
    : spec_(spec),
      n_blocks_(spec.n_blocks > 0 ? spec.n_blocks : spec.n_seq * blocks_per_sequence(spec)),
      block_shift_(std::countr_zero(static_cast<uint64_t>(spec.block_size))),
      tables_(static_cast<size_t>(spec.n_seq)),
      filled_(static_cast<size_t>(spec.n_seq), 0) {
  if (spec.n_blocks == 0) {
    const int64_t per_seq = blocks_per_sequence(spec);
    for (int64_t s = 0; s < spec.n_seq; ++s) {
      for (int64_t b = 0; b < per_seq; ++b) {
        tables_[static_cast<size_t>(s)].push_back(static_cast<int32_t>(s * per_seq + b));
      }
    }
  }
}

void KvTable::truncate(int32_t seq, int32_t from) {
  if (seq >= 0 && seq < spec_.n_seq) {
    filled_[static_cast<size_t>(seq)] = std::min(filled_[static_cast<size_t>(seq)], std::max(from, 0));
  }
}

Status KvTable::set_blocks(int32_t seq, std::span<const int32_t> blocks, int32_t n_filled) {
  if (spec_.n_blocks == 0) return Error{"KV cache: set_blocks on a contiguous (unpaged) cache"};
  if (seq < 0 || seq >= spec_.n_seq) return Error{"KV cache: sequence id " + std::to_string(seq) + " out of range"};
  for (int32_t block : blocks) {
    if (block < 0 || block >= n_blocks_) {
      return Error{"KV cache: block " + std::to_string(block) + " outside the pool of " + std::to_string(n_blocks_)};
    }
  }
  if (n_filled < 0 || n_filled > static_cast<int64_t>(blocks.size()) * spec_.block_size) {
    return Error{"KV cache: " + std::to_string(n_filled) + " filled positions do not fit " +
                 std::to_string(blocks.size()) + " blocks"};
  }
  std::vector<int32_t>& table = tables_[static_cast<size_t>(seq)];
  if (!std::equal(table.begin(), table.end(), blocks.begin(), blocks.end())) {
    table.assign(blocks.begin(), blocks.end());
    ++tables_version_;
  }
  filled_[static_cast<size_t>(seq)] = n_filled;
  return {};
}

Status KvTable::check_transfer(int32_t seq, int32_t n, bool write) const {
  if (seq < 0 || seq >= spec_.n_seq) return Error{"KV cache: sequence id " + std::to_string(seq) + " out of range"};
  const int64_t limit = write ? capacity(seq) : filled(seq);
  if (n < 0 || n > limit) {
    return Error{"KV cache: " + std::to_string(n) + " positions of sequence " + std::to_string(seq) + " to " +
                 (write ? "write; its blocks hold " : "read; it holds ") + std::to_string(limit)};
  }
  return {};
}

void KvTable::for_each_run(int32_t seq, int32_t n, const std::function<void(int32_t, int32_t, int64_t)>& fn) const {
  const std::vector<int32_t>& table = blocks(seq);
  const auto block = static_cast<int32_t>(spec_.block_size);
  int32_t first = 0;  // the run being gathered: positions [first, p), from pool row `row`
  int64_t row = 0;
  for (int32_t p = 0; p < n; p += block) {
    const int64_t here = static_cast<int64_t>(table[static_cast<size_t>(p >> block_shift_)]) << block_shift_;
    if (p > first && here != row + (p - first)) {
      fn(first, p - first, row);
      first = p;
    }
    if (p == first) row = here;
  }
  if (n > first) fn(first, n - first, row);
}

void KvTable::for_each_layer_run(int32_t seq, int32_t n, int32_t layer,
                                 const std::function<void(size_t, size_t, size_t)>& fn) const {
  const size_t row_bytes = static_cast<size_t>(spec_.n_embd_kv) * spec_.elem_bytes();
  const size_t layer_offset = static_cast<size_t>(layer) * layer_bytes();
  for_each_run(seq, n, [&](int32_t first, int32_t count, int64_t row) {
    fn(layer_offset + static_cast<size_t>(row) * row_bytes, static_cast<size_t>(first) * row_bytes,
       static_cast<size_t>(count) * row_bytes);
  });
}

Status KvTable::read_layers(int32_t seq, int32_t n, const CopyLayer& copy, const KvCache::LayerSink& sink) const {
  GUFO_RETURN_IF_ERROR(check_transfer(seq, n, /*write=*/false));
  std::vector<std::byte> k(static_cast<size_t>(n) * static_cast<size_t>(spec_.n_embd_kv) * spec_.elem_bytes());
  std::vector<std::byte> v(k.size());
  for (int32_t layer = 0; layer < spec_.n_layer; ++layer) {
    GUFO_RETURN_IF_ERROR(copy(layer, k.data(), v.data(), /*into_cache=*/false));
    GUFO_RETURN_IF_ERROR(sink(layer, k, v));
  }
  return {};
}

Status KvTable::write_layers(int32_t seq, int32_t n, const CopyLayer& copy, const KvCache::LayerSource& source) {
  GUFO_RETURN_IF_ERROR(check_transfer(seq, n, /*write=*/true));
  set_filled(seq, 0);  // until every layer is in
  std::vector<std::byte> k(static_cast<size_t>(n) * static_cast<size_t>(spec_.n_embd_kv) * spec_.elem_bytes());
  std::vector<std::byte> v(k.size());
  for (int32_t layer = 0; layer < spec_.n_layer; ++layer) {
    GUFO_RETURN_IF_ERROR(source(layer, k, v));
    GUFO_RETURN_IF_ERROR(copy(layer, k.data(), v.data(), /*into_cache=*/true));
  }
  set_filled(seq, n);
  return {};
}

Result<std::vector<int32_t>> KvTable::fill_after(const Batch& batch) const {
  std::vector<int32_t> filled = filled_;
  for (int64_t i = 0; i < batch.n_tokens(); ++i) {
    const int32_t seq = batch.seq_ids[static_cast<size_t>(i)];
    if (seq == kPaddingSeq) continue;
    const int32_t position = batch.positions[static_cast<size_t>(i)];
    int32_t& next = filled[static_cast<size_t>(seq)];
    if (position > next) {
      return Error{"batch: sequence " + std::to_string(seq) + " skips from position " + std::to_string(next) + " to " +
                   std::to_string(position)};
    }
    if (position >= capacity(seq)) {
      return Error{"batch: position " + std::to_string(position) + " of sequence " + std::to_string(seq) +
                   " is past its " + std::to_string(capacity(seq)) + " cache positions"};
    }
    next = position + 1;
  }
  return filled;
}

// NOTE(kv_pool): a fraction below 1 of what is free leaves room for what the reserve does not
// foresee (the allocator's granularity, a CUDA graph's private memory, other processes on the
// same GPU); vLLM's gpu_memory_utilization plays the same part.
int64_t kv_pool_tokens(const KvCacheSpec& spec, const MemoryInfo& memory, uint64_t reserve_bytes, double fraction,
                       int64_t limit_tokens) {
  if (memory.free_bytes <= reserve_bytes) return 0;
  const double usable = static_cast<double>(memory.free_bytes - reserve_bytes) * fraction;
  const auto per_token = static_cast<double>(std::max<uint64_t>(1, spec.bytes_per_token()));
  const auto tokens = static_cast<int64_t>(usable / per_token);
  return std::min(tokens, limit_tokens);
}

}  // namespace gufo::backend
