// CpuBackend (see cpu_backend.h): one f32 buffer per activation node, filled in graph order
// (Activations); run_node dispatches a node to its operator.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/kv_cache.h"
#include "backend/cpu/ops/moe.h"
#include "backend/cpu/ops/ops.h"
#include "backend/cpu/quant/dot_kernels.h"
#include "quant/quant.h"

namespace gufo::cpu {

namespace {

// The row-wise ops (rms_norm, rope, swiglu) go to the pool in tasks of at least this many
// rows; a decode step (one row) runs them inline.
constexpr int64_t kRowsPerTask = 4;

// From this many query rows on (prefill), attention widens each KV head to f32 once per
// sequence and thread (attend_rows_avx2) instead of converting the f16 cache for every row.
constexpr int64_t kBatchAttentionMinRows = 8;

// Prefill attention for the rows of one sequence (rows: batch row indices, ascending).
void attend_sequence_rows(ThreadPool& pool, CpuKvCache& cache, int32_t layer, const AttentionShape& shape,
                          const backend::Batch& batch, int32_t seq, const std::vector<int64_t>& rows, const float* q,
                          float* out, int64_t row_stride) {
  // Work items are (KV head, slice of rows); slices interleave rows so that each holds
  // early and late positions alike (causal rows cost their position).
  const int64_t n_rows = static_cast<int64_t>(rows.size());
  const int64_t slices =
      std::max<int64_t>(1, std::min<int64_t>(n_rows / kBatchAttentionMinRows,
                                             (2 * pool.n_threads() + shape.n_head_kv - 1) / shape.n_head_kv));
  const KvView view = cache.view(seq, layer);
  pool.parallel_for(shape.n_head_kv * slices, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> head_kv;
    std::vector<float> scratch;
    std::vector<int64_t> slice_rows;
    std::vector<int32_t> slice_positions;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t kv_head = item / slices;
      const int64_t slice = item % slices;
      slice_rows.clear();
      slice_positions.clear();
      for (int64_t i = slice; i < n_rows; i += slices) {
        slice_rows.push_back(rows[static_cast<size_t>(i)]);
        slice_positions.push_back(batch.positions[rows[static_cast<size_t>(i)]]);
      }
      const int32_t last = *std::max_element(slice_positions.begin(), slice_positions.end());
      scratch.resize(static_cast<size_t>(attention_rows_scratch_floats(last)));
      const AttentionRows attention_rows{.q = q,
                                         .out = out,
                                         .row_stride = row_stride,
                                         .row_index = slice_rows.data(),
                                         .positions = slice_positions.data(),
                                         .n_rows = static_cast<int64_t>(slice_rows.size())};
      attend_rows_avx2(view, shape, attention_rows, kv_head, head_kv, scratch.data());
    }
  });
}

// Attention for every row of the batch. A sequence with many rows in this batch (a prefill
// chunk) takes the batched path; the others (decode steps of a continuous batch) go row by
// row. Both give a row the same bits (NOTE(attention_avx2)).
void attend_all(ThreadPool& pool, CpuKvCache& cache, int32_t layer, const AttentionShape& shape,
                const backend::Batch& batch, const float* q, float* out, int64_t row_stride) {
  std::vector<int32_t> seqs;
  std::vector<std::vector<int64_t>> rows_of;
  for (int64_t r = 0; r < batch.n_tokens(); ++r) {
    if (batch.seq_ids[r] == backend::kPaddingSeq) continue;
    size_t s = 0;
    while (s < seqs.size() && seqs[s] != batch.seq_ids[r]) ++s;
    if (s == seqs.size()) {
      seqs.push_back(batch.seq_ids[r]);
      rows_of.emplace_back();
    }
    rows_of[s].push_back(r);
  }
  std::vector<int64_t> single_rows;
  for (size_t s = 0; s < seqs.size(); ++s) {
    if (attend_avx2_available() && static_cast<int64_t>(rows_of[s].size()) >= kBatchAttentionMinRows) {
      attend_sequence_rows(pool, cache, layer, shape, batch, seqs[s], rows_of[s], q, out, row_stride);
    } else {
      single_rows.insert(single_rows.end(), rows_of[s].begin(), rows_of[s].end());
    }
  }
  if (single_rows.empty()) return;
  if (!attend_avx2_available()) {
    pool.parallel_for(static_cast<int64_t>(single_rows.size()), 1, [&](int64_t begin, int64_t end) {
      std::vector<float> scratch;
      for (int64_t i = begin; i < end; ++i) {
        const int64_t r = single_rows[static_cast<size_t>(i)];
        scratch.resize(static_cast<size_t>(attention_scratch_floats(shape, batch.positions[r])));
        attend(cache.view(batch.seq_ids[r], layer), shape, q + r * row_stride, batch.positions[r], scratch.data(),
               out + r * row_stride);
      }
    });
    return;
  }
  // Work items are (row, KV head): a decode step (one row) still uses every thread.
  const int64_t n_items = static_cast<int64_t>(single_rows.size()) * shape.n_head_kv;
  pool.parallel_for(n_items, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = single_rows[static_cast<size_t>(item / shape.n_head_kv)];
      const int64_t kv_head = item % shape.n_head_kv;
      scratch.resize(static_cast<size_t>(attention_scratch_floats(shape, batch.positions[r])));
      attend_avx2(cache.view(batch.seq_ids[r], layer), shape, q + r * row_stride, batch.positions[r], kv_head,
                  kv_head + 1, scratch.data(), out + r * row_stride);
    }
  });
}

// NOTE(cpu_backend): one f32 buffer per activation node, filled in graph order. Buffers are
// recycled by exact size: a freed node's buffer is kept spare and the next node of that size
// takes it as it is (every op overwrites its whole output), so each distinct size is allocated,
// page-faulted and zeroed a few times per forward instead of once per node (pp512 spent ~20% of
// its time in memset and page faults). A buffer is freed after its last reader, so prefill
// memory stays a few nodes' worth.
class Activations {
 public:
  explicit Activations(const model::Graph& graph)
      : graph_(graph), values_(graph.nodes.size()), last_use_(graph.nodes.size(), model::kNoNode) {
    for (size_t id = 0; id < graph.nodes.size(); ++id) {
      for (model::NodeId src : graph.nodes[id].src) {
        if (src != model::kNoNode) last_use_[static_cast<size_t>(src)] = static_cast<model::NodeId>(id);
      }
    }
  }

  std::vector<float>& allocate(size_t id, size_t n) {
    std::vector<float>& buffer = values_[id];
    const auto spare = std::find_if(spare_.begin(), spare_.end(), [n](const auto& b) { return b.size() == n; });
    if (spare == spare_.end()) {
      buffer = std::vector<float>(n);
    } else {
      buffer = std::move(*spare);
      spare_.erase(spare);
    }
    return buffer;
  }

  const std::vector<float>& of(model::NodeId id) const { return values_[static_cast<size_t>(id)]; }
  // The node that `node` reads in input `slot`.
  const model::Node& node(const model::Node& node, int slot) const {
    return graph_.nodes[static_cast<size_t>(node.src[slot])];
  }
  const float* input(const model::Node& node, int slot) const { return of(node.src[slot]).data(); }

  // Frees the inputs of node `id` that no later node reads (the graph's output is kept).
  void release_inputs(size_t id) {
    for (model::NodeId src : graph_.nodes[id].src) {
      if (src == model::kNoNode || src == graph_.output ||
          last_use_[static_cast<size_t>(src)] != static_cast<model::NodeId>(id)) {
        continue;
      }
      std::vector<float>& freed = values_[static_cast<size_t>(src)];
      if (!freed.empty()) spare_.push_back(std::move(freed));
      freed = {};
    }
  }

 private:
  const model::Graph& graph_;
  std::vector<std::vector<float>> values_;
  std::vector<std::vector<float>> spare_;
  std::vector<model::NodeId> last_use_;
};

Status run_rms_norm(ThreadPool& pool, const model::Node& node, const float* x, const model::Weight& weight,
                    float* out) {
  const auto& p = std::get<model::RmsNormParams>(node.params);
  GUFO_ASSIGN_OR_RETURN(std::vector<float> w, weight_to_f32(weight));
  pool.parallel_for(node.rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
    rms_norm(x + begin * node.cols, end - begin, node.cols, w.data(), p.group, p.eps, out + begin * node.cols);
  });
  return {};
}

// a + b, where b is a node of the same shape or a weight row broadcast over a's rows (a bias).
Status run_add(const model::Node& node, const Activations& values, float* out) {
  const model::Node& b = values.node(node, 1);
  std::vector<float> bias;
  const float* bv = nullptr;
  if (b.op == model::Op::Weight) {
    GUFO_ASSIGN_OR_RETURN(bias, weight_to_f32(*b.weight));
    bv = bias.data();
  } else {
    bv = values.input(node, 1);
  }
  const float* a = values.input(node, 0);
  for (int64_t r = 0; r < node.rows; ++r) {
    const float* brow = b.rows == 1 ? bv : bv + r * node.cols;
    for (int64_t c = 0; c < node.cols; ++c) out[r * node.cols + c] = a[r * node.cols + c] + brow[c];
  }
  return {};
}

Status run_rope(ThreadPool& pool, const model::Graph& graph, const model::Node& node, const backend::Batch& batch,
                const float* x, float* out) {
  const auto& p = std::get<model::RopeParams>(node.params);
  std::vector<float> factors;
  if (node.src[1] != model::kNoNode) {
    GUFO_ASSIGN_OR_RETURN(factors, weight_to_f32(*graph.nodes[static_cast<size_t>(node.src[1])].weight));
  }
  pool.parallel_for(node.rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
    std::copy(x + begin * node.cols, x + end * node.cols, out + begin * node.cols);
    const auto positions =
        std::span<const int32_t>(batch.positions).subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    rope(out + begin * node.cols, end - begin, node.cols, positions, p.head_dim, p.type, p.theta,
         factors.empty() ? nullptr : factors.data());
  });
  return {};
}

// Stores the rows' K and V in the cache, then attends every row (padding rows give zeros).
Status run_attention(ThreadPool& pool, const model::Node& node, const backend::Batch& batch, CpuKvCache& cache,
                     const Activations& values, float* out) {
  const auto& p = std::get<model::AttentionParams>(node.params);
  if (p.layer >= cache.spec().n_layer || values.node(node, 1).cols != cache.spec().n_embd_kv) {
    return Error{"KV cache of " + std::to_string(cache.spec().n_layer) + " layers x " +
                 std::to_string(cache.spec().n_embd_kv) + " does not fit " + node.name};
  }
  const float* k = values.input(node, 1);
  const float* v = values.input(node, 2);
  const int64_t kv_cols = static_cast<int64_t>(p.n_head_kv) * p.head_dim;
  for (int64_t r = 0; r < node.rows; ++r) {
    if (batch.seq_ids[r] == backend::kPaddingSeq) {
      std::fill_n(out + r * node.cols, node.cols, 0.0f);
      continue;
    }
    kv_store(cache.view(batch.seq_ids[r], p.layer), batch.positions[r], k + r * kv_cols, v + r * kv_cols);
  }
  const AttentionShape shape{.n_head = p.n_head, .n_head_kv = p.n_head_kv, .head_dim = p.head_dim, .scale = p.scale};
  attend_all(pool, cache, p.layer, shape, batch, values.input(node, 0), out, node.cols);
  return {};
}

void run_swiglu(ThreadPool& pool, const model::Node& node, const float* gate, const float* up, float* out) {
  pool.parallel_for(node.rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
    swiglu(gate + begin * node.cols, up + begin * node.cols, (end - begin) * node.cols, out + begin * node.cols);
  });
}

void copy_output_rows(const model::Node& node, const backend::Batch& batch, const float* x, float* out) {
  for (size_t i = 0; i < batch.output_rows.size(); ++i) {
    std::copy_n(x + batch.output_rows[i] * node.cols, node.cols, out + i * node.cols);
  }
}

// The logits and, when asked, each output row's argmax (ties to the lower index, as
// std::max_element keeps the first of equal maxima).
void write_outputs(const model::Graph& graph, const std::vector<float>& result,
                   const backend::ForwardOutputs& outputs) {
  if (!outputs.logits.empty()) std::copy(result.begin(), result.end(), outputs.logits.begin());
  const int64_t n_vocab = graph.nodes[static_cast<size_t>(graph.output)].cols;
  for (size_t i = 0; i < outputs.argmax.size(); ++i) {
    const float* row = result.data() + static_cast<int64_t>(i) * n_vocab;
    outputs.argmax[i] = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
  }
}

// Runs one node into `out` (node.rows x node.cols floats).
Status run_node(ThreadPool& pool, const model::Graph& graph, const model::Node& node, const backend::Batch& batch,
                CpuKvCache& cache, const Activations& values, float* out) {
  const auto weight = [&](int slot) -> const model::Weight& {
    return *graph.nodes[static_cast<size_t>(node.src[slot])].weight;
  };
  switch (node.op) {
    case model::Op::GetRows:
      return get_rows(weight(0), batch.tokens, out);
    case model::Op::RmsNorm:
      return run_rms_norm(pool, node, values.input(node, 0), weight(1), out);
    case model::Op::MatMul:
      return mat_mul_fast(pool, values.input(node, 0), node.rows, values.node(node, 0).cols, weight(1), out);
    case model::Op::Add:
      return run_add(node, values, out);
    case model::Op::Rope:
      return run_rope(pool, graph, node, batch, values.input(node, 0), out);
    case model::Op::Attention:
      return run_attention(pool, node, batch, cache, values, out);
    case model::Op::SwiGlu:
      run_swiglu(pool, node, values.input(node, 0), values.input(node, 1), out);
      return {};
    case model::Op::OutputRows:
      copy_output_rows(node, batch, values.input(node, 0), out);
      return {};
    case model::Op::MoeFfn: {
      const auto& p = std::get<model::MoeParams>(node.params);
      const MoeExperts experts{.gate = &weight(2), .up = &weight(3), .down = &weight(4)};
      return moe_ffn(pool, values.input(node, 0), node.rows, values.input(node, 1), experts, p.n_expert_used,
                     p.norm_topk, out);
    }
    case model::Op::Weight:
    case model::Op::Tokens:
      break;
  }
  return {};
}

}  // namespace

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {}

backend::Capabilities CpuBackend::capabilities() const {
  const fast::DotKernels& kernels = fast::best_dot_kernels(fast::detected_cpu_features());
  return {
      .backend = "CPU",
      .threads = pool_.n_threads(),
      .device = "cpu (" + std::string(kernels.name) + " kernels, " + std::to_string(pool_.n_threads()) + " threads)",
      .batch_invariant = true,
      .device_memory = false,
      .numerics = "CPU " + std::string(kernels.name)};
}

backend::MemoryInfo CpuBackend::memory() const {
  backend::MemoryInfo info;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {  // "MemTotal:       24576000 kB"
    std::istringstream fields(line);
    std::string key;
    uint64_t kib = 0;
    if (!(fields >> key >> kib)) continue;
    if (key == "MemTotal:") info.total_bytes = kib * 1024;
    if (key == "MemAvailable:") info.free_bytes = kib * 1024;
  }
  return info;
}

bool CpuBackend::supports(const model::Node& node) const {
  if (node.op == model::Op::Weight) return quant::can_dequantize(node.weight->type);
  return true;
}

Status CpuBackend::prepare_weights(const model::Graph&) { return {}; }

Result<std::unique_ptr<backend::KvCache>> CpuBackend::create_kv_cache(const backend::KvCacheSpec& spec) {
  GUFO_RETURN_IF_ERROR(backend::KvTable::validate(spec));
  return std::unique_ptr<backend::KvCache>(std::make_unique<CpuKvCache>(spec));
}

Status CpuBackend::forward(const model::Graph& graph, const backend::Batch& batch, backend::KvCache& cache_base,
                           const backend::ForwardOutputs& outputs, const backend::NodeTap* tap) {
  auto& cache = static_cast<CpuKvCache&>(cache_base);
  GUFO_RETURN_IF_ERROR(backend::validate_batch(graph, batch, cache.spec()));
  GUFO_RETURN_IF_ERROR(backend::validate_outputs(graph, outputs));
  GUFO_ASSIGN_OR_RETURN(std::vector<int32_t> filled, cache.table().fill_after(batch));

  Activations values(graph);
  for (size_t id = 0; id < graph.nodes.size(); ++id) {
    const model::Node& node = graph.nodes[id];
    if (node.op == model::Op::Weight || node.op == model::Op::Tokens) continue;
    if (!supports(node)) return Error{"cpu backend cannot run node " + node.name};
    std::vector<float>& out = values.allocate(id, static_cast<size_t>(node.rows * node.cols));
    GUFO_RETURN_IF_ERROR(run_node(pool_, graph, node, batch, cache, values, out.data()));
    if (tap != nullptr) (*tap)(node, out);
    values.release_inputs(id);
  }
  write_outputs(graph, values.of(graph.output), outputs);
  cache.table().commit(std::move(filled));
  return {};
}

}  // namespace gufo::cpu
