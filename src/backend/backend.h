// The contract every backend implements (cpu, cuda), so that the engine never names one.
//   1. prepare_weights(graph): once per model, before any forward: whatever the kernels want
//      (upload to device memory, repack) is made from the mmap'd GGUF, streamed, never a
//      second whole copy in host memory.
//   2. capabilities() / memory(): what the device is, whether answers are batch-invariant,
//      and how much memory is free, so the engine sizes the paged KV pool from free memory
//      (kv_pool_tokens) instead of from --ctx x --parallel.
//   3. create_kv_cache(spec): the paged KV pool, in the backend's memory; the block tables
//      and fill levels follow one set of rules for every backend (backend/kv_table.h).
//   4. forward(graph, batch, cache, outputs): one step of a continuous batch; logits and/or
//      the greedy argmax (ties to the lower index) of the rows asked for. A batch may carry
//      padding rows (seq_id kPaddingSeq) so that a backend can reuse a plan (CUDA graph)
//      built for a bucket of batch sizes; they touch no cache and give no output.
//   5. Errors say what failed (ErrorKind): a bad batch (Invalid), OutOfMemory, DeviceLost.
//   6. A NodeTap sees every node's values by their stable names, so two backends or two
//      builds can be compared tensor by tensor.
// Tested by tests/unit/model (CPU), tests/ops and tests/gpu (CUDA against the CPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "model/graph.h"
#include "model/weights.h"

namespace gufo::backend {

// A batch row with this sequence id is padding: it is computed like any row (so a plan for
// a bucket of batch sizes can be reused) but writes no cache and is never an output row.
inline constexpr int32_t kPaddingSeq = -1;

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
  // Appends `n` padding rows (token 0, position 0, seq kPaddingSeq).
  void pad(int64_t n);
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

  // Bytes of one key (or value) element, and of the keys and values that one position of one
  // sequence takes over all layers.
  size_t elem_bytes() const { return type == DType::F32 ? 4 : 2; }
  uint64_t bytes_per_token() const;
};

// Key/value cache; what it holds is the backend's business, the bookkeeping rules are
// KvTable's (backend/kv_table.h).
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

  // Saving and restoring a sequence (engine/session_file.h): positions [0, n) of sequence
  // `seq`, a layer at a time, as keys and values of [n, n_embd_kv] each in spec().type,
  // row-major, whatever blocks hold them.
  using LayerSink = std::function<Status(int32_t layer, std::span<const std::byte> k, std::span<const std::byte> v)>;
  using LayerSource = std::function<Status(int32_t layer, std::span<std::byte> k, std::span<std::byte> v)>;
  // Hands the layers to `sink` in order; n is at most the sequence's fill level.
  virtual Status read_positions(int32_t seq, int32_t n, const LayerSink& sink) = 0;
  // Fills the layers from `source` in order; the sequence's blocks must hold n positions (and
  // be its own: blocks shared with another sequence are overwritten for it too). Its fill
  // level becomes n, or 0 when `source` or a copy fails partway.
  virtual Status write_positions(int32_t seq, int32_t n, const LayerSource& source) = 0;
};

struct Capabilities {
  std::string backend;           // as llama-bench names it: "CPU", "CUDA"
  int threads = 1;               // host threads the backend computes with
  std::string device;            // what runs the graph, e.g. "cpu (avx512vnni kernels, 16 threads)"
  bool batch_invariant = false;  // a row's numbers do not depend on its batch-mates
  bool device_memory = false;    // weights and cache live outside host memory
  // What decides its numbers, beside the weights and the gufo build: the kernel set and the
  // device it runs on, e.g. "CPU avx512vnni", "CUDA NVIDIA H200 sm_90". Saved keys and values
  // (engine/session_file.h) continue the same way only where this is the same.
  std::string numerics;
};

struct MemoryInfo {
  uint64_t free_bytes = 0;  // what the KV pool and activations may still take
  uint64_t total_bytes = 0;
};

// What a forward call returns for its output rows; an empty span is not wanted.
struct ForwardOutputs {
  // The graph's output rows, row-major: [n_outputs, n_vocab] logits, or [n_outputs, n_embd]
  // hidden states for a GraphOutput::Hidden graph.
  std::span<float> logits;
  std::span<int32_t> argmax;  // [n_outputs]: the largest logit, ties to the lower index
};

// Sees each computed node's values ([node.rows, node.cols] f32, row-major) in graph order.
using NodeTap = std::function<void(const model::Node& node, std::span<const float> values)>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // "cpu", "cuda"
  virtual Capabilities capabilities() const = 0;
  virtual MemoryInfo memory() const = 0;
  // Whether this backend can run `node` (op, weight type) at all.
  virtual bool supports(const model::Node& node) const = 0;
  // Prepares every weight `graph` reads; call once per model before forward. The weights'
  // bytes (the mmap'd file) must outlive the backend's use of them.
  virtual Status prepare_weights(const model::Graph& graph) = 0;
  virtual Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheSpec& spec) = 0;
  // Runs `graph` (built for batch.n_tokens() tokens and batch.output_rows.size() outputs).
  virtual Status forward(const model::Graph& graph, const Batch& batch, KvCache& cache, const ForwardOutputs& outputs,
                         const NodeTap* tap = nullptr) = 0;
};

// Checks a batch against its graph and cache before any work (token ids in the vocabulary,
// positions in range, output rows ascending and in range and never padding, sequence ids in
// range).
Status validate_batch(const model::Graph& graph, const Batch& batch, const KvCacheSpec& cache);
// Checks that `outputs` are sized for `graph`.
Status validate_outputs(const model::Graph& graph, const ForwardOutputs& outputs);

// Positions a paged pool can hold in `free_bytes` after `reserve_bytes` for everything else,
// at `fraction` of what is left (NOTE(kv_pool) in kv_table.cpp), capped at `limit_tokens`.
int64_t kv_pool_tokens(const KvCacheSpec& spec, const MemoryInfo& memory, uint64_t reserve_bytes, double fraction,
                       int64_t limit_tokens);

}  // namespace gufo::backend
