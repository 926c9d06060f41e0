// The interface every backend implements: run a model graph (model/graph.h) for one batch of
// tokens against the weights and a KV cache the backend owns (host or device memory).
// Designed with the CUDA backend in mind: the cache and any weight copies live wherever the
// backend puts them; batches hold several sequences (seq_ids) for continuous batching.
// Tested through tests/unit/model/forward_test.cpp (CPU) and tests/gpu (CUDA against CPU).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "model/graph.h"
#include "model/weights.h"

namespace gufo::backend {

// One forward call's tokens: token i of sequence seq_ids[i] at position positions[i].
// Logits are produced for the rows listed in output_rows (ascending), in that order.
struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> seq_ids;
  std::vector<int32_t> output_rows;

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
  // One sequence (id 0) from position `start`; logits for the last token, or for all.
  static Batch sequence(std::span<const int32_t> tokens, int32_t start, bool all_logits);
};

struct KvCacheSpec {
  int64_t n_layer = 0;
  int64_t n_embd_kv = 0;  // n_head_kv * head_dim
  int64_t n_ctx = 0;      // positions per sequence
  int64_t n_seq = 1;
  DType type = DType::F16;  // F16 (default, as llama.cpp) or F32 (exact references)
  // Paging: the cache is a pool of blocks of block_size positions (a power of two). With
  // n_blocks = 0 every sequence owns ceil(n_ctx / block_size) blocks of its own, in order
  // (what a single-sequence Session wants). With n_blocks > 0 the pool has that many blocks
  // and the caller maps each sequence's positions to blocks with set_blocks(), so sequences
  // can share the blocks of a common prefix (engine/kv_blocks.h decides which).
  int64_t block_size = 16;
  int64_t n_blocks = 0;
};

// Key/value cache; what it holds is the backend's business.
class KvCache {
 public:
  virtual ~KvCache() = default;
  virtual const KvCacheSpec& spec() const = 0;
  // Forgets positions >= `from` of sequence `seq` (e.g. to re-run or drop a sequence).
  virtual void truncate(int32_t seq, int32_t from) = 0;
  // Paged caches (spec().n_blocks > 0): sequence `seq` now reads and writes position p in
  // block blocks[p / block_size], and positions 0..n_filled-1 already hold keys and values
  // (blocks shared with another sequence's prefix). The next forward may continue at
  // n_filled; positions past blocks.size() * block_size are an error.
  virtual Status set_blocks(int32_t seq, std::span<const int32_t> blocks, int32_t n_filled) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Whether this backend can run `node` (op, weight type) at all.
  virtual bool supports(const model::Node& node) const = 0;
  virtual Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheSpec& spec) = 0;
  // Runs `graph` (built for batch.n_tokens() tokens and batch.output_rows.size() outputs);
  // logits: [n_outputs, n_vocab] row-major.
  virtual Status forward(const model::Graph& graph, const Batch& batch, KvCache& cache,
                         std::span<float> logits) = 0;
};

// Checks a batch against its graph and cache before any work (positions in range, output
// rows ascending and in range, one token per position per sequence).
Status validate_batch(const model::Graph& graph, const Batch& batch, const KvCacheSpec& cache);

}  // namespace gufo::backend
