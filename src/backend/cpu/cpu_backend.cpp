// CpuBackend (see cpu_backend.h): one f32 buffer per activation node, filled in graph order.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <fstream>
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

const float* input(const std::vector<std::vector<float>>& values, const model::Node& node, int slot) {
  return values[static_cast<size_t>(node.src[slot])].data();
}

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

}  // namespace

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {}

backend::Capabilities CpuBackend::capabilities() const {
  const fast::DotKernels& kernels = fast::best_dot_kernels(fast::detected_cpu_features());
  return {
      .backend = "CPU",
      .threads = pool_.n_threads(),
      .device = "cpu (" + std::string(kernels.name) + " kernels, " + std::to_string(pool_.n_threads()) + " threads)",
      .batch_invariant = true,
      .device_memory = false};
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

  std::vector<std::vector<float>> values(graph.nodes.size());
  // NOTE(cpu_backend): activation buffers are recycled by exact size: a freed node's buffer is
  // kept in `spare` and the next node of that size takes it as it is (every op overwrites its
  // whole output), so each distinct size is allocated, page-faulted and zeroed a few times per
  // forward instead of once per node (pp512 spent ~20% of its time in memset and page faults).
  std::vector<std::vector<float>> spare;
  const auto take_buffer = [&spare](size_t n) {
    for (auto it = spare.begin(); it != spare.end(); ++it) {
      if (it->size() == n) {
        std::vector<float> buffer = std::move(*it);
        spare.erase(it);
        return buffer;
      }
    }
    return std::vector<float>(n);
  };
  std::vector<model::NodeId> last_use(graph.nodes.size(), model::kNoNode);
  for (size_t id = 0; id < graph.nodes.size(); ++id) {
    for (model::NodeId src : graph.nodes[id].src) {
      if (src != model::kNoNode) last_use[static_cast<size_t>(src)] = static_cast<model::NodeId>(id);
    }
  }
  for (size_t id = 0; id < graph.nodes.size(); ++id) {
    const model::Node& node = graph.nodes[id];
    if (node.op == model::Op::Weight || node.op == model::Op::Tokens) continue;
    if (!supports(node)) return Error{"cpu backend cannot run node " + node.name};
    std::vector<float>& out = values[id];
    out = take_buffer(static_cast<size_t>(node.rows * node.cols));
    const auto src_node = [&](int slot) -> const model::Node& {
      return graph.nodes[static_cast<size_t>(node.src[slot])];
    };
    switch (node.op) {
      case model::Op::GetRows:
        GUFO_RETURN_IF_ERROR(get_rows(*src_node(0).weight, batch.tokens, out.data()));
        break;
      case model::Op::RmsNorm: {
        const auto& p = std::get<model::RmsNormParams>(node.params);
        GUFO_ASSIGN_OR_RETURN(std::vector<float> w, weight_to_f32(*src_node(1).weight));
        const float* x = input(values, node, 0);
        pool_.parallel_for(node.rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
          rms_norm(x + begin * node.cols, end - begin, node.cols, w.data(), p.group, p.eps,
                   out.data() + begin * node.cols);
        });
        break;
      }
      case model::Op::MatMul:
        GUFO_RETURN_IF_ERROR(
            mat_mul_fast(pool_, input(values, node, 0), node.rows, src_node(0).cols, *src_node(1).weight, out.data()));
        break;
      case model::Op::Add: {
        const model::Node& b = src_node(1);
        std::vector<float> bias;
        const float* bv = nullptr;
        if (b.op == model::Op::Weight) {
          GUFO_ASSIGN_OR_RETURN(bias, weight_to_f32(*b.weight));
          bv = bias.data();
        } else {
          bv = input(values, node, 1);
        }
        const float* a = input(values, node, 0);
        for (int64_t r = 0; r < node.rows; ++r) {
          const float* brow = b.rows == 1 ? bv : bv + r * node.cols;
          for (int64_t c = 0; c < node.cols; ++c) out[r * node.cols + c] = a[r * node.cols + c] + brow[c];
        }
        break;
      }
      case model::Op::Rope: {
        const auto& p = std::get<model::RopeParams>(node.params);
        std::vector<float> factors;
        if (node.src[1] != model::kNoNode) {
          GUFO_ASSIGN_OR_RETURN(factors, weight_to_f32(*src_node(1).weight));
        }
        const float* x = input(values, node, 0);
        pool_.parallel_for(node.rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
          std::copy(x + begin * node.cols, x + end * node.cols, out.data() + begin * node.cols);
          rope(out.data() + begin * node.cols, end - begin, node.cols,
               std::span<const int32_t>(batch.positions)
                   .subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)),
               p.head_dim, p.type, p.theta, factors.empty() ? nullptr : factors.data());
        });
        break;
      }
      case model::Op::Attention: {
        const auto& p = std::get<model::AttentionParams>(node.params);
        if (p.layer >= cache.spec().n_layer || src_node(1).cols != cache.spec().n_embd_kv) {
          return Error{"KV cache of " + std::to_string(cache.spec().n_layer) + " layers x " +
                       std::to_string(cache.spec().n_embd_kv) + " does not fit " + node.name};
        }
        const float* q = input(values, node, 0);
        const float* k = input(values, node, 1);
        const float* v = input(values, node, 2);
        for (int64_t r = 0; r < node.rows; ++r) {
          if (batch.seq_ids[r] == backend::kPaddingSeq) continue;
          kv_store(cache.view(batch.seq_ids[r], p.layer), batch.positions[r], k + r * p.n_head_kv * p.head_dim,
                   v + r * p.n_head_kv * p.head_dim);
        }
        const AttentionShape shape{
            .n_head = p.n_head, .n_head_kv = p.n_head_kv, .head_dim = p.head_dim, .scale = p.scale};
        for (int64_t r = 0; r < node.rows; ++r) {  // padding rows attend to nothing
          if (batch.seq_ids[r] == backend::kPaddingSeq) std::fill_n(out.data() + r * node.cols, node.cols, 0.0f);
        }
        attend_all(pool_, cache, p.layer, shape, batch, q, out.data(), node.cols);
        break;
      }
      case model::Op::SwiGlu: {
        const float* gate = input(values, node, 0);
        const float* up = input(values, node, 1);
        pool_.parallel_for(node.rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
          swiglu(gate + begin * node.cols, up + begin * node.cols, (end - begin) * node.cols,
                 out.data() + begin * node.cols);
        });
        break;
      }
      case model::Op::OutputRows: {
        const float* x = input(values, node, 0);
        for (size_t i = 0; i < batch.output_rows.size(); ++i) {
          std::copy_n(x + batch.output_rows[i] * node.cols, node.cols, out.data() + i * node.cols);
        }
        break;
      }
      case model::Op::MoeFfn: {
        const auto& p = std::get<model::MoeParams>(node.params);
        const MoeExperts experts{.gate = src_node(2).weight, .up = src_node(3).weight, .down = src_node(4).weight};
        GUFO_RETURN_IF_ERROR(moe_ffn(pool_, input(values, node, 0), node.rows, input(values, node, 1), experts,
                                     p.n_expert_used, p.norm_topk, out.data()));
        break;
      }
      case model::Op::Weight:
      case model::Op::Tokens:
        break;
    }
    if (tap != nullptr) (*tap)(node, out);
    // Free the activations no later node reads: prefill memory stays a few nodes' worth.
    for (model::NodeId src : node.src) {
      if (src != model::kNoNode && last_use[static_cast<size_t>(src)] == static_cast<model::NodeId>(id) &&
          src != graph.output) {
        std::vector<float>& freed = values[static_cast<size_t>(src)];
        if (!freed.empty()) spare.push_back(std::move(freed));
        freed = {};
      }
    }
  }
  const std::vector<float>& result = values[static_cast<size_t>(graph.output)];
  if (!outputs.logits.empty()) std::copy(result.begin(), result.end(), outputs.logits.begin());
  if (!outputs.argmax.empty()) {
    const int64_t n_vocab = graph.nodes[static_cast<size_t>(graph.output)].cols;
    for (size_t i = 0; i < outputs.argmax.size(); ++i) {
      const float* row = result.data() + static_cast<int64_t>(i) * n_vocab;
      // std::max_element keeps the first of equal maxima: ties go to the lower index.
      outputs.argmax[i] = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
    }
  }
  cache.table().commit(std::move(filled));
  return {};
}

}  // namespace gufo::cpu
