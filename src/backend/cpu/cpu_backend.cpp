// CpuBackend (see cpu_backend.h): one f32 buffer per activation node, filled in graph order.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cpu/ops/moe.h"
#include "backend/cpu/ops/ops.h"
#include "quant/quant.h"

namespace gufo::cpu {

namespace {

// KV cache in host memory: per sequence and layer, K and V as [n_ctx, n_embd_kv].
class CpuKvCache final : public backend::KvCache {
 public:
  explicit CpuKvCache(const backend::KvCacheSpec& spec)
      : spec_(spec),
        elem_bytes_(spec.type == DType::F32 ? 4 : 2),
        k_(static_cast<size_t>(spec.n_seq * spec.n_layer * spec.n_ctx * spec.n_embd_kv) * elem_bytes_),
        v_(k_.size()),
        filled_(static_cast<size_t>(spec.n_seq), 0) {}

  const backend::KvCacheSpec& spec() const override { return spec_; }
  void truncate(int32_t seq, int32_t from) override {
    if (seq >= 0 && seq < spec_.n_seq) {
      filled_[seq] = std::min(filled_[seq], std::max(from, 0));
    }
  }

  KvView view(int32_t seq, int32_t layer) {
    const size_t offset =
        static_cast<size_t>((seq * spec_.n_layer + layer) * spec_.n_ctx * spec_.n_embd_kv) * elem_bytes_;
    return KvView{.type = spec_.type, .k = k_.data() + offset, .v = v_.data() + offset,
                  .n_embd_kv = spec_.n_embd_kv};
  }
  std::vector<int32_t>& filled() { return filled_; }

 private:
  backend::KvCacheSpec spec_;
  size_t elem_bytes_;
  std::vector<std::byte> k_;
  std::vector<std::byte> v_;
  std::vector<int32_t> filled_;  // per sequence: positions 0..filled-1 hold keys and values
};

const float* input(const std::vector<std::vector<float>>& values, const model::Node& node, int slot) {
  return values[static_cast<size_t>(node.src[slot])].data();
}

// The row-wise ops (rms_norm, rope, swiglu) go to the pool in tasks of at least this many
// rows; a decode step (one row) runs them inline.
constexpr int64_t kRowsPerTask = 4;

// From this many query rows on (prefill), attention widens each KV head to f32 once per
// sequence and thread (attend_rows_avx2) instead of converting the f16 cache for every row.
constexpr int64_t kBatchAttentionMinRows = 8;

void attend_batch(ThreadPool& pool, CpuKvCache& cache, int32_t layer, const AttentionShape& shape,
                  const backend::Batch& batch, const float* q, float* out, int64_t row_stride) {
  // Rows by sequence, in batch order.
  std::vector<int32_t> seqs;
  std::vector<std::vector<int64_t>> rows_of;
  for (int64_t r = 0; r < batch.n_tokens(); ++r) {
    size_t s = 0;
    while (s < seqs.size() && seqs[s] != batch.seq_ids[r]) ++s;
    if (s == seqs.size()) {
      seqs.push_back(batch.seq_ids[r]);
      rows_of.emplace_back();
    }
    rows_of[s].push_back(r);
  }
  for (size_t s = 0; s < seqs.size(); ++s) {
    const std::vector<int64_t>& rows = rows_of[s];
    // Work items are (KV head, slice of rows); slices interleave rows so that each holds
    // early and late positions alike (causal rows cost their position).
    const int64_t n_rows = static_cast<int64_t>(rows.size());
    const int64_t slices = std::max<int64_t>(
        1, std::min<int64_t>(n_rows / kBatchAttentionMinRows,
                             (2 * pool.n_threads() + shape.n_head_kv - 1) / shape.n_head_kv));
    const KvView view = cache.view(seqs[s], layer);
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
        const AttentionRows attention_rows{.q = q, .out = out, .row_stride = row_stride,
                                           .row_index = slice_rows.data(), .positions = slice_positions.data(),
                                           .n_rows = static_cast<int64_t>(slice_rows.size())};
        attend_rows_avx2(view, shape, attention_rows, kv_head, head_kv, scratch.data());
      }
    });
  }
}

}  // namespace

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {}

bool CpuBackend::supports(const model::Node& node) const {
  if (node.op == model::Op::Weight) return quant::can_dequantize(node.weight->type);
  return true;
}

Result<std::unique_ptr<backend::KvCache>> CpuBackend::create_kv_cache(const backend::KvCacheSpec& spec) {
  if (spec.type != DType::F16 && spec.type != DType::F32) {
    return Error{"KV cache type " + std::string(dtype_name(spec.type)) + " (supported: f16, f32)"};
  }
  if (spec.n_layer < 1 || spec.n_embd_kv < 1 || spec.n_ctx < 1 || spec.n_seq < 1) {
    return Error{"KV cache needs positive layers, width, context and sequences"};
  }
  return std::unique_ptr<backend::KvCache>(std::make_unique<CpuKvCache>(spec));
}

Status CpuBackend::forward(const model::Graph& graph, const backend::Batch& batch,
                           backend::KvCache& cache_base, std::span<float> logits) {
  auto& cache = static_cast<CpuKvCache&>(cache_base);
  GUFO_RETURN_IF_ERROR(backend::validate_batch(graph, batch, cache.spec()));
  const model::Node& out_node = graph.nodes[static_cast<size_t>(graph.output)];
  if (logits.size() != static_cast<size_t>(out_node.rows * out_node.cols)) {
    return Error{"forward: logits buffer holds " + std::to_string(logits.size()) + " floats, needs " +
                 std::to_string(out_node.rows * out_node.cols)};
  }
  // Each sequence continues where its cache ends (or rewrites an earlier position): no gaps.
  std::vector<int32_t> filled = cache.filled();
  for (int64_t i = 0; i < batch.n_tokens(); ++i) {
    int32_t& next = filled[static_cast<size_t>(batch.seq_ids[i])];
    if (batch.positions[i] > next) {
      return Error{"batch: sequence " + std::to_string(batch.seq_ids[i]) + " skips from position " +
                   std::to_string(next) + " to " + std::to_string(batch.positions[i])};
    }
    next = batch.positions[i] + 1;
  }

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
        GUFO_RETURN_IF_ERROR(mat_mul_fast(pool_, input(values, node, 0), node.rows,
                                          src_node(0).cols, *src_node(1).weight, out.data()));
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
               std::span<const int32_t>(batch.positions).subspan(static_cast<size_t>(begin),
                                                                 static_cast<size_t>(end - begin)),
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
          kv_store(cache.view(batch.seq_ids[r], p.layer), batch.positions[r], k + r * p.n_head_kv * p.head_dim,
                   v + r * p.n_head_kv * p.head_dim);
        }
        const AttentionShape shape{.n_head = p.n_head, .n_head_kv = p.n_head_kv,
                                   .head_dim = p.head_dim, .scale = p.scale};
        if (!attend_avx2_available()) {
          pool_.parallel_for(node.rows, 1, [&](int64_t begin, int64_t end) {
            std::vector<float> scratch;
            for (int64_t r = begin; r < end; ++r) {
              scratch.resize(static_cast<size_t>(attention_scratch_floats(shape, batch.positions[r])));
              attend(cache.view(batch.seq_ids[r], p.layer), shape, q + r * node.cols, batch.positions[r],
                     scratch.data(), out.data() + r * node.cols);
            }
          });
          break;
        }
        if (node.rows >= kBatchAttentionMinRows) {
          attend_batch(pool_, cache, p.layer, shape, batch, q, out.data(), node.cols);
          break;
        }
        // Work items are (row, KV head): a decode step (one row) still uses every thread.
        pool_.parallel_for(node.rows * p.n_head_kv, 1, [&](int64_t begin, int64_t end) {
          std::vector<float> scratch;
          for (int64_t item = begin; item < end; ++item) {
            const int64_t r = item / p.n_head_kv;
            const int64_t kv_head = item % p.n_head_kv;
            scratch.resize(static_cast<size_t>(attention_scratch_floats(shape, batch.positions[r])));
            attend_avx2(cache.view(batch.seq_ids[r], p.layer), shape, q + r * node.cols, batch.positions[r], kv_head,
                        kv_head + 1, scratch.data(), out.data() + r * node.cols);
          }
        });
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
        const MoeExperts experts{.gate = src_node(2).weight, .up = src_node(3).weight,
                                 .down = src_node(4).weight};
        GUFO_RETURN_IF_ERROR(moe_ffn(pool_, input(values, node, 0), node.rows, input(values, node, 1),
                                     experts, p.n_expert_used, p.norm_topk, out.data()));
        break;
      }
      case model::Op::Weight:
      case model::Op::Tokens:
        break;
    }
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
  std::copy(result.begin(), result.end(), logits.begin());
  cache.filled() = filled;
  return {};
}

}  // namespace gufo::cpu
