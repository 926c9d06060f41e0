// The KV-cache bookkeeping every backend shares: per sequence a block table (which pool
// block holds positions [i * block_size, (i + 1) * block_size)) and a fill level (positions
// 0..filled-1 hold keys and values). The rules live here once:
//   - a spec is valid when its type is f16/f32, counts are positive and the block size is a
//     power of two;
//   - a forward may rewrite earlier positions or continue at the fill level, never skip one
//     (a gap would be attended as garbage), and never write past the sequence's blocks;
//   - truncate only lowers a fill level; set_blocks (paged pools) replaces a table.
// The backend keeps the keys and values themselves wherever it likes.
// Tested by tests/unit/backend/kv_table_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace gufo::backend {

class KvTable {
 public:
  static Status validate(const KvCacheSpec& spec);
  // The spec must have passed validate().
  explicit KvTable(const KvCacheSpec& spec);

  const KvCacheSpec& spec() const { return spec_; }
  int64_t n_blocks() const { return n_blocks_; }  // the pool's blocks (every sequence's when unpaged)
  int32_t block_shift() const { return block_shift_; }
  // Bytes of one layer's keys (or values) over the whole pool; layer l's start at l times this.
  size_t layer_bytes() const {
    return static_cast<size_t>(n_blocks_ * spec_.block_size * spec_.n_embd_kv) * spec_.elem_bytes();
  }
  const std::vector<int32_t>& blocks(int32_t seq) const { return tables_[static_cast<size_t>(seq)]; }
  int32_t filled(int32_t seq) const { return filled_[static_cast<size_t>(seq)]; }
  // Positions sequence `seq` can hold with its current blocks.
  int64_t capacity(int32_t seq) const { return static_cast<int64_t>(blocks(seq).size()) * spec_.block_size; }

  void truncate(int32_t seq, int32_t from);
  Status set_blocks(int32_t seq, std::span<const int32_t> blocks, int32_t n_filled);

  // Saving and restoring (KvCache::read_positions, write_positions): whether positions
  // [0, n) of `seq` may be read (n <= its fill level) or written (n <= its capacity); then
  // those positions as runs that lie together in the pool, fn(first position, count, first
  // pool row), in position order.
  Status check_transfer(int32_t seq, int32_t n, bool write) const;
  void for_each_run(int32_t seq, int32_t n, const std::function<void(int32_t, int32_t, int64_t)>& fn) const;
  // The same runs of one layer in bytes, for a backend's copy: fn(offset into the layer-major
  // K or V pool, offset into host [n, n_embd_kv] rows, bytes).
  void for_each_layer_run(int32_t seq, int32_t n, int32_t layer,
                          const std::function<void(size_t pool, size_t host, size_t bytes)>& fn) const;
  // KvCache::read_positions and write_positions over a backend's own copy of one layer's
  // positions [0, n) between its pools and host k, v ([n, n_embd_kv] each): the checks, the
  // host buffers, the layer loop and the fill level, in one place.
  using CopyLayer = std::function<Status(int32_t layer, std::byte* k, std::byte* v, bool into_cache)>;
  Status read_layers(int32_t seq, int32_t n, const CopyLayer& copy, const KvCache::LayerSink& sink) const;
  Status write_layers(int32_t seq, int32_t n, const CopyLayer& copy, const KvCache::LayerSource& source);

  // The fill levels after `batch` ran, or why the batch may not run (a gap, a position past
  // the blocks). Padding rows are ignored. Nothing changes until commit().
  Result<std::vector<int32_t>> fill_after(const Batch& batch) const;
  void commit(std::vector<int32_t> filled) { filled_ = std::move(filled); }
  // Bumped by every change to a block table, so a backend can tell when to re-upload them.
  uint64_t tables_version() const { return tables_version_; }

 private:
  void set_filled(int32_t seq, int32_t n) { filled_[static_cast<size_t>(seq)] = n; }

  KvCacheSpec spec_;
  int64_t n_blocks_;
  int32_t block_shift_;
  std::vector<std::vector<int32_t>> tables_;  // per sequence: block ids, position order
  std::vector<int32_t> filled_;               // per sequence: positions 0..filled-1 are valid
  uint64_t tables_version_ = 0;
};

}  // namespace gufo::backend
