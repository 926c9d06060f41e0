// CudaBackend (see cuda_backend.h). A forward uploads the batch (token ids, positions,
// sequence ids, output rows) to fixed device buffers, runs the graph node by node on one
// stream into an activation arena planned per batch shape (activation_plan.h), and copies
// back the logits or the argmax. Small batches are captured as a CUDA graph the second time
// their shape comes, and replayed after: every launch of a forward depends on the shape and
// the cache alone (attention sizes its splits from the cache's context, not the batch), so a
// replay computes exactly what the launches would.
#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/activation_plan.h"
#include "backend/cuda/alignment.h"
#include "backend/cuda/check.cuh"
#include "backend/cuda/device_info.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/device_weights.h"
#include "backend/cuda/fusion_plan.h"
#include "backend/cuda/kv_cache.h"
#include "backend/cuda/node_profile.h"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/ops/scale_add.cuh"

namespace gufo::cuda {

static_assert(kPaddingSeq == backend::kPaddingSeq, "the kernels' padding id must be the batch's");

namespace {

// The profile's name for a node: its op, the weight type of a matmul and the batch bucket.
std::string profile_kind(const model::Graph& graph, const model::Node& node) {
  std::string kind(model::op_name(node.op));
  if (node.op == model::Op::MatMul) {
    kind += " " + std::string(dtype_name(graph.nodes[static_cast<size_t>(node.src[1])].weight->type));
    kind += node.name == "logits" ? " (output)" : "";
  }
  kind += node.rows <= 8 ? " x" + std::to_string(node.rows) : node.rows <= 64 ? " x<=64" : " x>64";
  return kind;
}

AttentionShape attention_shape(const model::Node& node) {
  const auto& p = std::get<model::AttentionParams>(node.params);
  return {.n_head = p.n_head, .n_head_kv = p.n_head_kv, .head_dim = p.head_dim, .scale = p.scale};
}

// Scratch a node needs besides its output (quantized activations, the MoE's routing and
// expert outputs); attention's is sized per cache (Plan::attention).
size_t node_scratch_bytes(const model::Graph& graph, const model::Node& node) {
  const auto src = [&](int slot) -> const model::Node& { return graph.nodes[static_cast<size_t>(node.src[slot])]; };
  switch (node.op) {
    case model::Op::MatMul: {
      const DType type = src(1).weight->type;
      return is_quantized_matmul_type(type) ? quant_acts_bytes(node.rows, src(0).cols, wants_q8k(type)) : 0;
    }
    case model::Op::MoeFfn: {
      const auto& p = std::get<model::MoeParams>(node.params);
      const int64_t slots = node.rows * p.n_expert_used;
      const int64_t n_embd = node.cols;
      return aligned_bytes(moe_routing_bytes(node.rows, p.n_expert, p.n_expert_used)) +
             aligned_bytes(quant_acts_bytes(node.rows, n_embd, false)) +
             aligned_bytes(quant_acts_bytes(node.rows, n_embd, true)) +
             3 * aligned_bytes(static_cast<size_t>(slots * p.n_ff_exp) * sizeof(float)) +
             aligned_bytes(quant_acts_bytes(slots, p.n_ff_exp, wants_q8k(src(4).weight->type))) +
             aligned_bytes(static_cast<size_t>(slots * n_embd) * sizeof(float));
    }
    default:
      return 0;
  }
}

// NOTE(cuda_graphs): decode steps and small continuous batches are where launch overhead
// shows; prefill batches are long enough to hide it, and each distinct prompt length would
// otherwise capture a graph of its own.
constexpr int64_t kGraphMaxTokens = 64;
// NOTE(cuda_graphs): every cache and batch shape captures its own graphs; past this many the
// oldest caches' graphs are most likely of caches already gone, and all are dropped.
constexpr size_t kMaxGraphs = 64;

struct PlanKey {
  int64_t n_tokens;
  int64_t n_outputs;
  model::GraphOutput output;
  auto operator<=>(const PlanKey&) const = default;
};

struct Plan {
  FusionPlan fusions;
  ActivationPlan activations;
  size_t scratch_bytes = 0;  // what every node but attention needs (node_scratch_bytes)
  // Attention's split partials follow the cache's context, so they are sized per forward.
  std::optional<AttentionShape> attention;
  int64_t rope_head_dim = 0;  // the widest Rope's: rope_angles() per row
};

// What a forward's RoPE angles (rope_angles) were computed for.
struct RopeKey {
  float theta;
  int64_t head_dim;
  const float* freq_factors;
  bool operator==(const RopeKey&) const = default;
};

struct GraphKey {
  uint64_t cache;  // CudaKvCache::id()
  int64_t n_tokens;
  int64_t n_outputs;
  model::GraphOutput output;
  bool logits;
  bool argmax;
  auto operator<=>(const GraphKey&) const = default;
};

struct CapturedGraph {
  int uses = 0;
  gpu::graph_exec_t exec = nullptr;
  bool failed = false;  // capture failed once: this shape runs eagerly
};

class CudaBackend final : public backend::Backend {
 public:
  CudaBackend(int index, DeviceInfo info, gpu::stream_t stream)
      : index_(index), info_(std::move(info)), stream_(stream) {}
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  backend::Capabilities capabilities() const override {
    return {.backend = "CUDA",
            .threads = 1,
            .device = "cuda:" + std::to_string(index_) + " (" + info_.name + ", sm_" + std::to_string(info_.cc_major) +
                      std::to_string(info_.cc_minor) + ")",
            .batch_invariant = true,
            .device_memory = true};
  }
  backend::MemoryInfo memory() const override;
  bool supports(const model::Node& node) const override;
  Status prepare_weights(const model::Graph& graph) override;
  Result<std::unique_ptr<backend::KvCache>> create_kv_cache(const backend::KvCacheSpec& spec) override;
  Status forward(const model::Graph& graph, const backend::Batch& batch, backend::KvCache& cache,
                 const backend::ForwardOutputs& outputs, const backend::NodeTap* tap) override;
  void set_graphs(bool enabled) { graphs_enabled_ = enabled; }
  void set_profile(bool enabled) { profile_ = enabled ? std::make_unique<NodeProfile>() : nullptr; }
  void set_fusion(bool enabled) { fusion_enabled_ = enabled; }

 private:
  Result<const Plan*> plan_for(const model::Graph& graph, const CudaKvCache& cache);
  template <class Kind>
  Status reserve(OwnedMemory<Kind>& memory, size_t bytes, const char* what);
  Status upload_batch(const backend::Batch& batch);
  Status launch_graph(const model::Graph& graph, const Plan& plan, CudaKvCache& cache,
                      const backend::ForwardOutputs& outputs, const backend::NodeTap* tap);
  Status launch_outputs(const model::Graph& graph, const Plan& plan, const backend::ForwardOutputs& outputs);
  Status run_node(const model::Graph& graph, size_t id, const Plan& plan, CudaKvCache& cache);
  Status run_fused(const model::Graph& graph, const Fusion& run, const Plan& plan, const CudaKvCache& cache);
  // The batch's angles for a Rope node: computed by the first node of a forward that needs
  // them, reused by the rest (every layer of the supported models rotates alike).
  Result<const float*> angles_for(const model::Graph& graph, const model::Node& rope);
  // The cache layer an Attention node reads and writes; an error when the cache does not fit it.
  Result<KvLayer> kv_layer_for(const model::Graph& graph, const model::Node& attention, const CudaKvCache& cache) const;
  BatchRows batch_rows() const {
    const auto* ids = batch_.get<int32_t>();
    return {.positions = ids + batch_capacity_, .seq_ids = ids + 2 * batch_capacity_, .n_rows = n_rows_};
  }
  // `source` [rows, k] quantized for the integer matmul of `type` in scratch_, once for all
  // the matmuls that read it (q, k and v; gate and up).
  Result<QuantActs> quantized_input(const Plan& plan, model::NodeId source, int64_t rows, int64_t k, DType type);
  Status tap_node(const model::Graph& graph, const Plan& plan, size_t id, const backend::NodeTap& tap,
                  std::vector<float>& tapped);
  Status run_attention(const model::Graph& graph, const model::Node& node, const Plan& plan, CudaKvCache& cache,
                       float* out);
  Status run_moe(const model::Graph& graph, const model::Node& node, const Plan& plan, float* out);
  // A weight's device form; an error (not a fault) if prepare_weights never saw it.
  Result<const WeightView*> matrix_of(const model::Node& node) const {
    const WeightView* view = weights_.matrix(node.weight);
    if (view == nullptr) return Error{"cuda backend: tensor '" + node.name + "' was not prepared"};
    return view;
  }
  Result<const float*> vector_of(const model::Node& node) const {
    const float* values = weights_.vector(node.weight);
    if (values == nullptr) return Error{"cuda backend: tensor '" + node.name + "' was not prepared"};
    return values;
  }
  float* value(const Plan& plan, model::NodeId id) const {
    return reinterpret_cast<float*>(arena_.get<std::byte>() + plan.activations.offsets[static_cast<size_t>(id)]);
  }
  const model::Node& src(const model::Graph& graph, const model::Node& node, int slot) const {
    return graph.nodes[static_cast<size_t>(node.src[slot])];
  }
  void drop_graphs();
  void evict_graphs();
  Status capture(const model::Graph& graph, const Plan& plan, CudaKvCache& cache,
                 const backend::ForwardOutputs& outputs, CapturedGraph& captured);

  int index_;
  DeviceInfo info_;
  gpu::stream_t stream_;
  DeviceWeights weights_;
  std::map<PlanKey, Plan> plans_;
  std::map<GraphKey, CapturedGraph> graphs_;
  DeviceMemory arena_;
  DeviceMemory scratch_;
  DeviceMemory tickets_;  // attention()'s, zero between launches
  DeviceMemory angles_;   // rope_angles() of the current forward's rows
  std::optional<RopeKey> angles_key_;
  DeviceMemory batch_;  // tokens, positions, seq_ids, output_rows: 4 arrays of batch_capacity_
  int64_t batch_capacity_ = 0;
  PinnedMemory batch_host_;
  DeviceMemory outputs_;  // argmax ids
  PinnedMemory logits_host_;
  PinnedMemory argmax_host_;
  int64_t n_rows_ = 0;  // the current batch's rows
  struct Quantized {
    model::NodeId source = model::kNoNode;  // the node whose values the scratch holds quantized
    bool q8k = false;
  } quantized_;
  bool graphs_enabled_ = true;
  bool fusion_enabled_ = true;
  std::unique_ptr<NodeProfile> profile_;  // GUFO_CUDA_PROFILE=1
};

CudaBackend::~CudaBackend() {
  drop_graphs();
  gpu::stream_synchronize(stream_);
  gpu::stream_destroy(stream_);
}

// Records the launches of one forward as a graph. A capture that fails leaves the stream as it
// was and marks the shape to run eagerly from then on; only a lost device is an error.
Status CudaBackend::capture(const model::Graph& graph, const Plan& plan, CudaKvCache& cache,
                            const backend::ForwardOutputs& outputs, CapturedGraph& captured) {
  if (gpu::stream_begin_capture(stream_) != gpu::success) {
    gpu::clear_last_error();
    captured.failed = true;
    return {};
  }
  const Status launched = launch_graph(graph, plan, cache, outputs, nullptr);
  gpu::graph_t g = nullptr;
  const gpu::error_t ended = gpu::stream_end_capture(stream_, &g);
  gpu::error_t made = gpu::success;
  if (launched.ok() && ended == gpu::success) made = gpu::graph_instantiate(&captured.exec, g);
  if (g != nullptr) gpu::graph_destroy(g);
  if (!launched.ok() || ended != gpu::success || made != gpu::success) {
    gpu::clear_last_error();
    captured.exec = nullptr;
    captured.failed = true;
    if (!launched.ok() && launched.error().kind == ErrorKind::DeviceLost) return launched.error();
    if (gpu::is_device_lost(ended)) GUFO_GPU_RETURN_IF_ERROR(ended, "capturing a CUDA graph");
  }
  return {};
}

// Shapes seen once and never captured go first; when captured graphs alone fill the table,
// it is emptied (most of them belong to caches that are gone).
void CudaBackend::evict_graphs() {
  for (auto it = graphs_.begin(); it != graphs_.end();) {
    it = it->second.exec == nullptr ? graphs_.erase(it) : std::next(it);
  }
  if (graphs_.size() >= kMaxGraphs) drop_graphs();
}

void CudaBackend::drop_graphs() {
  for (auto& [key, graph] : graphs_) {
    if (graph.exec != nullptr) gpu::graph_exec_destroy(graph.exec);
  }
  graphs_.clear();
}

backend::MemoryInfo CudaBackend::memory() const {
  // NOTE(cuda_backend): the current device is per host thread, and the engine calls from a
  // thread of its own: every entry point selects this backend's device first.
  gpu::set_device(index_);
  size_t free_bytes = 0, total_bytes = 0;
  if (gpu::mem_get_info(&free_bytes, &total_bytes) != gpu::success) {
    gpu::clear_last_error();
    return {};
  }
  return {.free_bytes = free_bytes, .total_bytes = total_bytes};
}

bool CudaBackend::supports(const model::Node& node) const {
  switch (node.op) {
    case model::Op::Weight:
      return device_supports_type(node.weight->type) || node.weight->rows == 1;
    case model::Op::Attention:
      return attention_supports(attention_shape(node));
    case model::Op::MoeFfn: {
      const auto& p = std::get<model::MoeParams>(node.params);
      return moe_supports(p.n_expert, p.n_expert_used);
    }
    default:
      return true;
  }
}

Status CudaBackend::prepare_weights(const model::Graph& graph) {
  GUFO_GPU_RETURN_IF_ERROR(gpu::set_device(index_), "cuda:" + std::to_string(index_));
  // Matrices go in their kernel layout; vectors read by row-wise ops as f32. Everything is
  // sized first, so a model too large for the device fails before any upload.
  std::vector<std::pair<const model::Weight*, bool>> uploads;  // (weight, as matrix)
  uint64_t needed = 0;
  for (const model::Node& node : graph.nodes) {
    for (size_t slot = 0; slot < model::kMaxSrc; ++slot) {
      if (node.src[slot] == model::kNoNode) continue;
      const model::Node& source = graph.nodes[static_cast<size_t>(node.src[slot])];
      if (source.op != model::Op::Weight) continue;
      const bool as_matrix =
          node.op == model::Op::MatMul || node.op == model::Op::GetRows || node.op == model::Op::MoeFfn;
      const std::pair<const model::Weight*, bool> upload{source.weight, as_matrix};
      if (std::find(uploads.begin(), uploads.end(), upload) != uploads.end()) continue;
      uploads.push_back(upload);
      needed += as_matrix ? DeviceWeights::matrix_bytes(*source.weight) : DeviceWeights::vector_bytes(*source.weight);
    }
  }
  const backend::MemoryInfo mem = memory();
  if (needed > mem.free_bytes) {
    return Error{"the weights need " + mib_text(needed) + " of device memory; cuda:" + std::to_string(index_) + " (" +
                     info_.name + ") has " + mib_text(mem.free_bytes) + " free of " + mib_text(mem.total_bytes),
                 ErrorKind::OutOfMemory};
  }
  for (const auto& [weight, as_matrix] : uploads) {
    GUFO_RETURN_IF_ERROR(as_matrix ? weights_.upload_matrix(*weight, stream_)
                                   : weights_.upload_vector(*weight, stream_));
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream_), "uploading weights");
  return {};
}

Result<std::unique_ptr<backend::KvCache>> CudaBackend::create_kv_cache(const backend::KvCacheSpec& spec) {
  GUFO_GPU_RETURN_IF_ERROR(gpu::set_device(index_), "cuda:" + std::to_string(index_));
  GUFO_RETURN_IF_ERROR(backend::KvTable::validate(spec));
  GUFO_ASSIGN_OR_RETURN(std::unique_ptr<CudaKvCache> cache, CudaKvCache::create(spec, stream_));
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream_), "KV cache");
  return std::unique_ptr<backend::KvCache>(std::move(cache));
}

// Grows `memory` to `bytes`. Captured graphs hold the old addresses (device buffers, and the
// pinned buffers their copies write to), so they go too.
template <class Kind>
Status CudaBackend::reserve(OwnedMemory<Kind>& memory, size_t bytes, const char* what) {
  if (memory.bytes() >= bytes) return {};
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream_), what);
  drop_graphs();
  memory.reset();
  GUFO_ASSIGN_OR_RETURN(memory, OwnedMemory<Kind>::allocate(bytes, what));
  return {};
}

Result<const Plan*> CudaBackend::plan_for(const model::Graph& graph, const CudaKvCache& cache) {
  const PlanKey key{graph.n_tokens, graph.n_outputs, graph.output_kind};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    Plan plan;
    plan.fusions = plan_fusions(graph, fusion_enabled_);
    plan.activations = plan_activations(graph, &plan.fusions.run_end);
    for (const model::Node& node : graph.nodes) {
      plan.scratch_bytes = std::max(plan.scratch_bytes, node_scratch_bytes(graph, node));
      if (node.op == model::Op::Attention) plan.attention = attention_shape(node);
      if (node.op == model::Op::Rope) {
        plan.rope_head_dim = std::max(plan.rope_head_dim, std::get<model::RopeParams>(node.params).head_dim);
      }
    }
    it = plans_.emplace(key, std::move(plan)).first;
  }
  const Plan& plan = it->second;
  size_t scratch = plan.scratch_bytes;
  if (plan.attention) {
    scratch = std::max(scratch, attention_scratch_bytes(*plan.attention, graph.n_tokens,
                                                        static_cast<int32_t>(cache.spec().n_ctx - 1)));
  }
  if (plan.attention) {
    // NOTE(attention): the tickets start at zero and every launch leaves them so; only a new
    // buffer is cleared.
    const size_t bytes = static_cast<size_t>(attention_tickets(*plan.attention)) * sizeof(int32_t);
    if (tickets_.bytes() < bytes) {
      GUFO_RETURN_IF_ERROR(reserve(tickets_, bytes, "attention tickets"));
      GUFO_GPU_RETURN_IF_ERROR(gpu::memset_async(tickets_.get(), 0, bytes, stream_), "attention tickets");
    }
  }
  GUFO_RETURN_IF_ERROR(reserve(arena_, plan.activations.arena_bytes, "activations"));
  GUFO_RETURN_IF_ERROR(
      reserve(angles_, static_cast<size_t>(std::max<int64_t>(graph.n_tokens * plan.rope_head_dim, 1)) * sizeof(float),
              "rope angles"));
  GUFO_RETURN_IF_ERROR(reserve(scratch_, std::max(scratch, kDeviceAlign), "scratch"));
  return &plan;
}

Status CudaBackend::upload_batch(const backend::Batch& batch) {
  const int64_t n = batch.n_tokens();
  if (n > batch_capacity_) {
    const int64_t capacity = std::max<int64_t>(n, 512);
    GUFO_RETURN_IF_ERROR(reserve(batch_, static_cast<size_t>(4 * capacity) * sizeof(int32_t), "batch"));
    GUFO_RETURN_IF_ERROR(reserve(batch_host_, static_cast<size_t>(4 * capacity) * sizeof(int32_t), "batch"));
    batch_capacity_ = capacity;
  }
  auto* host = batch_host_.get<int32_t>();
  std::copy(batch.tokens.begin(), batch.tokens.end(), host);
  std::copy(batch.positions.begin(), batch.positions.end(), host + batch_capacity_);
  std::copy(batch.seq_ids.begin(), batch.seq_ids.end(), host + 2 * batch_capacity_);
  std::copy(batch.output_rows.begin(), batch.output_rows.end(), host + 3 * batch_capacity_);
  GUFO_GPU_RETURN_IF_ERROR(gpu::copy_to_device_async(
                               batch_.get(), host, static_cast<size_t>(4 * batch_capacity_) * sizeof(int32_t), stream_),
                           "uploading the batch");
  n_rows_ = n;
  return {};
}

Result<KvLayer> CudaBackend::kv_layer_for(const model::Graph& graph, const model::Node& attention,
                                          const CudaKvCache& cache) const {
  const auto& p = std::get<model::AttentionParams>(attention.params);
  if (p.layer >= cache.spec().n_layer || src(graph, attention, 1).cols != cache.spec().n_embd_kv) {
    return Error{"KV cache of " + std::to_string(cache.spec().n_layer) + " layers x " +
                 std::to_string(cache.spec().n_embd_kv) + " does not fit " + attention.name};
  }
  return cache.layer(p.layer);
}

Status CudaBackend::run_attention(const model::Graph& graph, const model::Node& node, const Plan& plan,
                                  CudaKvCache& cache, float* out) {
  GUFO_ASSIGN_OR_RETURN(const KvLayer kv, kv_layer_for(graph, node, cache));
  const BatchRows rows = batch_rows();
  const model::Node& k = src(graph, node, 1);
  const model::Node& v = src(graph, node, 2);
  const auto id = static_cast<size_t>(&node - graph.nodes.data());
  if (!plan.fusions.kv_stored[id]) {
    GUFO_RETURN_IF_ERROR(
        kv_store(kv, rows, value(plan, node.src[1]), k.cols, value(plan, node.src[2]), v.cols, stream_));
  }
  // NOTE(cuda_graphs): the split count follows the cache's context, never the batch's positions.
  return attention(kv, rows, attention_shape(node), value(plan, node.src[0]), src(graph, node, 0).cols,
                   static_cast<int32_t>(cache.spec().n_ctx - 1), scratch_.get(), tickets_.get<int32_t>(), out,
                   node.cols, stream_);
}

Status CudaBackend::run_moe(const model::Graph& graph, const model::Node& node, const Plan& plan, float* out) {
  const auto& p = std::get<model::MoeParams>(node.params);
  GUFO_ASSIGN_OR_RETURN(const WeightView* gate, matrix_of(src(graph, node, 2)));
  GUFO_ASSIGN_OR_RETURN(const WeightView* up, matrix_of(src(graph, node, 3)));
  GUFO_ASSIGN_OR_RETURN(const WeightView* down, matrix_of(src(graph, node, 4)));
  const int64_t rows = node.rows;
  const int64_t slots = rows * p.n_expert_used;
  const int64_t n_embd = node.cols;
  auto* base = scratch_.get<std::byte>();
  const auto take = [&](size_t bytes) {
    std::byte* at = base;
    base += aligned_bytes(bytes);
    return at;
  };
  const MoeRouting routing =
      moe_routing_at(take(moe_routing_bytes(rows, p.n_expert, p.n_expert_used)), rows, p.n_expert, p.n_expert_used);
  // Activations in each format the expert stacks need (gate and up may differ, as may down).
  const QuantActs x_q8_0 = quant_acts_at(take(quant_acts_bytes(rows, n_embd, false)), rows, n_embd, false);
  const QuantActs x_q8k = quant_acts_at(take(quant_acts_bytes(rows, n_embd, true)), rows, n_embd, true);
  auto* gate_out = reinterpret_cast<float*>(take(static_cast<size_t>(slots * p.n_ff_exp) * sizeof(float)));
  auto* up_out = reinterpret_cast<float*>(take(static_cast<size_t>(slots * p.n_ff_exp) * sizeof(float)));
  auto* act = reinterpret_cast<float*>(take(static_cast<size_t>(slots * p.n_ff_exp) * sizeof(float)));
  const bool down_q8k = wants_q8k(down->type);
  const QuantActs act_q =
      quant_acts_at(take(quant_acts_bytes(slots, p.n_ff_exp, down_q8k)), slots, p.n_ff_exp, down_q8k);
  auto* down_out = reinterpret_cast<float*>(take(static_cast<size_t>(slots * n_embd) * sizeof(float)));

  const float* x = value(plan, node.src[0]);
  GUFO_RETURN_IF_ERROR(
      moe_route(value(plan, node.src[1]), rows, p.n_expert, p.n_expert_used, p.norm_topk, routing, stream_));
  const int64_t grid = moe_grid_experts(rows, p.n_expert, p.n_expert_used);
  const ExpertRows by_token{.offsets = routing.offsets,
                            .x_rows = routing.slot_rows,
                            .n_expert = p.n_expert,
                            .max_rows = rows,
                            .active = routing.active,
                            .grid_experts = grid};
  const ExpertRows by_slot{.offsets = routing.offsets,
                           .x_rows = nullptr,
                           .n_expert = p.n_expert,
                           .max_rows = rows,
                           .active = routing.active,
                           .grid_experts = grid};
  bool have_q8_0 = false, have_q8k = false;
  // x quantized as an integer matmul of `type` reads it, once per format.
  const auto quantized_x = [&](DType type) -> Result<const QuantActs*> {
    const bool q8k = wants_q8k(type);
    bool& have = q8k ? have_q8k : have_q8_0;
    const QuantActs& acts = q8k ? x_q8k : x_q8_0;
    if (!have) GUFO_RETURN_IF_ERROR(quantize_acts(x, n_embd, acts, stream_));
    have = true;
    return &acts;
  };
  // out [slots, n_ff_exp] = each slot's token through its expert's rows of `w`.
  const auto up_projection = [&](const WeightView& w, float* y) -> Status {
    if (!is_quantized_matmul_type(w.type)) return mat_mul_float(w, x, rows, n_embd, y, p.n_ff_exp, &by_token, stream_);
    GUFO_ASSIGN_OR_RETURN(const QuantActs* acts, quantized_x(w.type));
    return mat_mul_q(w, *acts, y, p.n_ff_exp, &by_token, stream_);
  };
  if (is_quantized_matmul_type(gate->type) && gate->type == up->type) {
    // Both stacks read the same quantized activations: one launch where it is a decode step.
    GUFO_ASSIGN_OR_RETURN(const QuantActs* acts, quantized_x(gate->type));
    const MatMulPart parts[] = {{.w = gate, .out = gate_out, .ldo = p.n_ff_exp},
                                {.w = up, .out = up_out, .ldo = p.n_ff_exp}};
    GUFO_RETURN_IF_ERROR(mat_mul_q_parts(parts, 2, *acts, &by_token, stream_));
  } else {
    GUFO_RETURN_IF_ERROR(up_projection(*gate, gate_out));
    GUFO_RETURN_IF_ERROR(up_projection(*up, up_out));
  }
  if (is_quantized_matmul_type(down->type)) {
    GUFO_RETURN_IF_ERROR(swiglu_quant(gate_out, up_out, slots, p.n_ff_exp, act, act_q, stream_));
    GUFO_RETURN_IF_ERROR(mat_mul_q(*down, act_q, down_out, n_embd, &by_slot, stream_));
  } else {
    GUFO_RETURN_IF_ERROR(swiglu(gate_out, up_out, slots * p.n_ff_exp, act, stream_));
    GUFO_RETURN_IF_ERROR(mat_mul_float(*down, act, slots, p.n_ff_exp, down_out, n_embd, &by_slot, stream_));
  }
  return moe_combine(down_out, n_embd, routing, rows, p.n_expert_used, out, stream_);
}

Status CudaBackend::run_node(const model::Graph& graph, size_t id, const Plan& plan, CudaKvCache& cache) {
  const model::Node& node = graph.nodes[id];
  float* out = value(plan, static_cast<model::NodeId>(id));
  const auto* ids = batch_.get<int32_t>();
  const auto input = [&](int slot) { return value(plan, node.src[slot]); };
  switch (node.op) {
    case model::Op::GetRows: {
      GUFO_ASSIGN_OR_RETURN(const WeightView* table, matrix_of(src(graph, node, 0)));
      return get_rows(*table, ids, node.rows, out, stream_);
    }
    case model::Op::RmsNorm: {
      const auto& p = std::get<model::RmsNormParams>(node.params);
      GUFO_ASSIGN_OR_RETURN(const float* w, vector_of(src(graph, node, 1)));
      return rms_norm(input(0), node.rows, node.cols, w, p.group, p.eps, out, stream_);
    }
    case model::Op::MatMul: {
      GUFO_ASSIGN_OR_RETURN(const WeightView* view, matrix_of(src(graph, node, 1)));
      const WeightView& w = *view;
      const int64_t k = src(graph, node, 0).cols;
      if (!is_quantized_matmul_type(w.type)) {
        return mat_mul_float(w, input(0), node.rows, k, out, node.cols, nullptr, stream_);
      }
      GUFO_ASSIGN_OR_RETURN(const QuantActs acts, quantized_input(plan, node.src[0], node.rows, k, w.type));
      return mat_mul_q(w, acts, out, node.cols, nullptr, stream_);
    }
    case model::Op::Add: {
      const model::Node& b = src(graph, node, 1);
      const float* bv = input(1);
      if (b.op == model::Op::Weight) {
        GUFO_ASSIGN_OR_RETURN(bv, vector_of(b));
      }
      return add(input(0), bv, node.rows, node.cols, b.rows, out, stream_);
    }
    case model::Op::Rope: {
      const auto& p = std::get<model::RopeParams>(node.params);
      GUFO_ASSIGN_OR_RETURN(const float* angles, angles_for(graph, node));
      return rope(input(0), out, node.rows, node.cols, angles, p.head_dim, p.type == model::RopeType::Neox, stream_);
    }
    case model::Op::Attention:
      quantized_ = {};  // scratch is reused
      return run_attention(graph, node, plan, cache, out);
    case model::Op::SwiGlu:
      return swiglu(input(0), input(1), node.rows * node.cols, out, stream_);
    case model::Op::OutputRows:
      return gather_rows(input(0), node.cols, ids + 3 * batch_capacity_, node.rows, out, stream_);
    case model::Op::MoeFfn:
      quantized_ = {};  // scratch is reused
      return run_moe(graph, node, plan, out);
    case model::Op::Weight:
    case model::Op::Tokens:
      return {};
  }
  return Error{"cuda backend: unknown op in " + node.name};
}

Status CudaBackend::launch_outputs(const model::Graph& graph, const Plan& plan,
                                   const backend::ForwardOutputs& outputs) {
  const model::Node& out = graph.nodes[static_cast<size_t>(graph.output)];
  const float* logits = value(plan, graph.output);
  if (!outputs.logits.empty()) {
    const size_t bytes = static_cast<size_t>(out.rows * out.cols) * sizeof(float);
    GUFO_GPU_RETURN_IF_ERROR(gpu::copy_to_host_async(logits_host_.get(), logits, bytes, stream_), "copying logits");
  }
  if (!outputs.argmax.empty()) {
    const size_t bytes = static_cast<size_t>(out.rows) * sizeof(int32_t);
    GUFO_RETURN_IF_ERROR(argmax_rows(logits, out.rows, out.cols, outputs_.get<int32_t>(), stream_));
    GUFO_GPU_RETURN_IF_ERROR(gpu::copy_to_host_async(argmax_host_.get(), outputs_.get(), bytes, stream_),
                             "copying argmax");
  }
  return {};
}

Result<const float*> CudaBackend::angles_for(const model::Graph& graph, const model::Node& rope) {
  const auto& p = std::get<model::RopeParams>(rope.params);
  const float* factors = nullptr;
  if (rope.src[1] != model::kNoNode) {
    GUFO_ASSIGN_OR_RETURN(factors, vector_of(src(graph, rope, 1)));
  }
  const RopeKey key{.theta = p.theta, .head_dim = p.head_dim, .freq_factors = factors};
  if (angles_key_ != key) {
    GUFO_RETURN_IF_ERROR(
        rope_angles(batch_rows().positions, n_rows_, p.head_dim, p.theta, factors, angles_.get<float>(), stream_));
    angles_key_ = key;
  }
  return angles_.get<float>();
}

Result<QuantActs> CudaBackend::quantized_input(const Plan& plan, model::NodeId source, int64_t rows, int64_t k,
                                               DType type) {
  const bool q8k = wants_q8k(type);
  const QuantActs acts = quant_acts_at(scratch_.get(), rows, k, q8k);
  if (quantized_.source != source || quantized_.q8k != q8k) {
    GUFO_RETURN_IF_ERROR(quantize_acts(value(plan, source), k, acts, stream_));
    quantized_ = {.source = source, .q8k = q8k};
  }
  return acts;
}

// A fused run (fusion_plan.h): one kernel writes every member's output.
Status CudaBackend::run_fused(const model::Graph& graph, const Fusion& run, const Plan& plan,
                              const CudaKvCache& cache) {
  const auto out = [&](size_t member) { return value(plan, run.nodes[member]); };
  const model::Node& first = graph.nodes[static_cast<size_t>(run.nodes[0])];
  switch (run.kind) {
    case FusionKind::AddNorm:
    case FusionKind::Norm: {
      const bool with_add = run.kind == FusionKind::AddNorm;
      const model::NodeId norm_id = run.nodes.back();
      const model::Node& norm = graph.nodes[static_cast<size_t>(norm_id)];
      const auto& p = std::get<model::RmsNormParams>(norm.params);
      GUFO_ASSIGN_OR_RETURN(const float* w, vector_of(src(graph, norm, 1)));
      const bool q8k = run.quant == FusedQuant::Q8K;
      const QuantActs acts = quant_acts_at(scratch_.get(), norm.rows, norm.cols, q8k);
      const QuantActs* quant = run.quant != FusedQuant::None ? &acts : nullptr;
      const float* a = with_add ? value(plan, first.src[0]) : value(plan, norm.src[0]);
      const float* b = with_add ? value(plan, first.src[1]) : nullptr;
      GUFO_RETURN_IF_ERROR(add_rms_norm(a, b, norm.rows, norm.cols, with_add ? out(0) : nullptr, w, p.eps,
                                        value(plan, norm_id), quant, stream_));
      quantized_ = quant != nullptr ? Quantized{.source = norm_id, .q8k = q8k} : Quantized{};
      return {};
    }
    case FusionKind::QkNormRope: {
      const model::Node& nq = first;
      const model::Node& nk = graph.nodes[static_cast<size_t>(run.nodes[1])];
      const model::Node& rq = graph.nodes[static_cast<size_t>(run.nodes[2])];
      const auto& norm = std::get<model::RmsNormParams>(nq.params);
      GUFO_ASSIGN_OR_RETURN(const float* q_norm, vector_of(src(graph, nq, 1)));
      GUFO_ASSIGN_OR_RETURN(const float* k_norm, vector_of(src(graph, nk, 1)));
      GUFO_ASSIGN_OR_RETURN(const float* angles, angles_for(graph, rq));
      const BatchRows rows = batch_rows();
      KvLayer kv;
      const float* v = nullptr;
      if (run.stores_kv_of != model::kNoNode) {
        const model::Node& attention = graph.nodes[static_cast<size_t>(run.stores_kv_of)];
        GUFO_ASSIGN_OR_RETURN(kv, kv_layer_for(graph, attention, cache));
        v = value(plan, attention.src[2]);
      }
      return qk_norm_rope({.q = value(plan, nq.src[0]),
                           .k = value(plan, nk.src[0]),
                           .rows = nq.rows,
                           .n_head = nq.cols / norm.group,
                           .n_head_kv = nk.cols / norm.group,
                           .head_dim = norm.group,
                           .q_norm = q_norm,
                           .k_norm = k_norm,
                           .eps = norm.eps,
                           .angles = angles,
                           .positions = rows.positions,
                           .q_normed = out(0),
                           .k_normed = out(1),
                           .q_out = out(2),
                           .k_out = out(3),
                           .kv = kv,
                           .seq_ids = rows.seq_ids,
                           .v = v},
                          stream_);
    }
    case FusionKind::SwigluQuant: {
      const bool q8k = run.quant == FusedQuant::Q8K;
      const QuantActs acts = quant_acts_at(scratch_.get(), first.rows, first.cols, q8k);
      GUFO_RETURN_IF_ERROR(swiglu_quant(value(plan, first.src[0]), value(plan, first.src[1]), first.rows, first.cols,
                                        out(0), acts, stream_));
      quantized_ = {.source = run.nodes[0], .q8k = q8k};
      return {};
    }
    case FusionKind::MatMuls: {
      const int64_t k = src(graph, first, 0).cols;
      GUFO_ASSIGN_OR_RETURN(const WeightView* w0, matrix_of(src(graph, first, 1)));
      GUFO_ASSIGN_OR_RETURN(const QuantActs acts, quantized_input(plan, first.src[0], first.rows, k, w0->type));
      static_assert(kMaxFusedMatMuls <= kMaxMatMulParts);
      MatMulPart parts[kMaxFusedMatMuls];
      const int n = static_cast<int>(run.nodes.size());
      for (int i = 0; i < n; ++i) {
        const model::Node& node = graph.nodes[static_cast<size_t>(run.nodes[static_cast<size_t>(i)])];
        GUFO_ASSIGN_OR_RETURN(const WeightView* w, matrix_of(src(graph, node, 1)));
        parts[i] = {.w = w, .out = out(static_cast<size_t>(i)), .ldo = node.cols};
      }
      return mat_mul_q_parts(parts, n, acts, nullptr, stream_);
    }
    case FusionKind::None:
      break;
  }
  return Error{"cuda backend: unknown fused run at " + first.name};
}

Status CudaBackend::tap_node(const model::Graph& graph, const Plan& plan, size_t id, const backend::NodeTap& tap,
                             std::vector<float>& tapped) {
  const model::Node& node = graph.nodes[id];
  tapped.resize(static_cast<size_t>(node.rows * node.cols));
  GUFO_GPU_RETURN_IF_ERROR(gpu::copy_to_host_async(tapped.data(), value(plan, static_cast<model::NodeId>(id)),
                                                   tapped.size() * sizeof(float), stream_),
                           node.name);
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream_), node.name);
  tap(node, tapped);
  return {};
}

Status CudaBackend::launch_graph(const model::Graph& graph, const Plan& plan, CudaKvCache& cache,
                                 const backend::ForwardOutputs& outputs, const backend::NodeTap* tap) {
  std::vector<float> tapped;
  quantized_ = {};
  angles_key_.reset();
  for (size_t id = 0; id < graph.nodes.size(); ++id) {
    const model::Node& node = graph.nodes[id];
    if (node.op == model::Op::Weight || node.op == model::Op::Tokens) continue;
    const int run = plan.fusions.starts[id];
    if (profile_ != nullptr)
      profile_->mark(run >= 0 ? "fused: " + profile_kind(graph, node) : profile_kind(graph, node), stream_);
    const Status s = run >= 0 ? run_fused(graph, plan.fusions.runs[static_cast<size_t>(run)], plan, cache)
                              : run_node(graph, id, plan, cache);
    if (!s.ok()) return Error{node.name + ": " + s.error().message, s.error().kind};
    const size_t last = run >= 0 ? static_cast<size_t>(plan.fusions.runs[static_cast<size_t>(run)].nodes.back()) : id;
    if (tap != nullptr) {
      for (size_t member = id; member <= last; ++member) {
        const model::Op op = graph.nodes[member].op;
        if (op != model::Op::Weight && op != model::Op::Tokens)
          GUFO_RETURN_IF_ERROR(tap_node(graph, plan, member, *tap, tapped));
      }
    }
    id = last;
  }
  if (profile_ != nullptr) profile_->mark("outputs", stream_);
  GUFO_RETURN_IF_ERROR(launch_outputs(graph, plan, outputs));
  if (profile_ != nullptr) profile_->finish(stream_);
  return {};
}

Status CudaBackend::forward(const model::Graph& graph, const backend::Batch& batch, backend::KvCache& cache_base,
                            const backend::ForwardOutputs& outputs, const backend::NodeTap* tap) {
  auto& cache = static_cast<CudaKvCache&>(cache_base);
  GUFO_RETURN_IF_ERROR(backend::validate_batch(graph, batch, cache.spec()));
  GUFO_RETURN_IF_ERROR(backend::validate_outputs(graph, outputs));
  GUFO_ASSIGN_OR_RETURN(std::vector<int32_t> filled, cache.table().fill_after(batch));
  GUFO_GPU_RETURN_IF_ERROR(gpu::set_device(index_), "cuda:" + std::to_string(index_));
  // A forward that failed may have left copies from the pinned batch buffer in flight.
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream_), "forward");
  GUFO_ASSIGN_OR_RETURN(const Plan* plan, plan_for(graph, cache));
  // Every buffer a launch touches is in place before any capture (no allocation inside one).
  const model::Node& out = graph.nodes[static_cast<size_t>(graph.output)];
  const auto n_out = static_cast<size_t>(std::max<int64_t>(graph.n_outputs, 256));
  GUFO_RETURN_IF_ERROR(reserve(outputs_, n_out * sizeof(int32_t), "argmax"));
  GUFO_RETURN_IF_ERROR(reserve(argmax_host_, n_out * sizeof(int32_t), "argmax"));
  if (!outputs.logits.empty()) {
    GUFO_RETURN_IF_ERROR(reserve(logits_host_, static_cast<size_t>(out.rows * out.cols) * sizeof(float), "logits"));
  }
  GUFO_RETURN_IF_ERROR(upload_batch(batch));
  GUFO_RETURN_IF_ERROR(cache.sync_tables(stream_));

  if (graphs_.size() >= kMaxGraphs) evict_graphs();
  const GraphKey key{cache.id(),        graph.n_tokens,          graph.n_outputs,
                     graph.output_kind, !outputs.logits.empty(), !outputs.argmax.empty()};
  const bool graphable = graphs_enabled_ && profile_ == nullptr && tap == nullptr && graph.n_tokens <= kGraphMaxTokens;
  CapturedGraph* captured = graphable ? &graphs_[key] : nullptr;
  if (captured != nullptr && captured->exec == nullptr && !captured->failed && ++captured->uses >= 2) {
    GUFO_RETURN_IF_ERROR(capture(graph, *plan, cache, outputs, *captured));
  }
  if (captured != nullptr && captured->exec != nullptr) {
    GUFO_GPU_RETURN_IF_ERROR(gpu::graph_launch(captured->exec, stream_), "replaying a CUDA graph");
  } else {
    GUFO_RETURN_IF_ERROR(launch_graph(graph, *plan, cache, outputs, tap));
  }
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream_), "forward");
  if (!outputs.logits.empty()) {
    std::memcpy(outputs.logits.data(), logits_host_.get(), static_cast<size_t>(out.rows * out.cols) * sizeof(float));
  }
  if (!outputs.argmax.empty()) {
    std::memcpy(outputs.argmax.data(), argmax_host_.get(), static_cast<size_t>(out.rows) * sizeof(int32_t));
  }
  cache.table().commit(std::move(filled));
  return {};
}

}  // namespace

Result<std::unique_ptr<backend::Backend>> create_cuda_backend(int index) {
  GUFO_ASSIGN_OR_RETURN(std::vector<DeviceInfo> devices, query_devices());
  if (index < 0 || index >= static_cast<int>(devices.size())) {
    return Error{
        "--device cuda:" + std::to_string(index) + ": there are " + std::to_string(devices.size()) + " CUDA devices",
        ErrorKind::Unsupported};
  }
  const std::string context = "cuda:" + std::to_string(index);
  GUFO_GPU_RETURN_IF_ERROR(gpu::set_device(index), context);
  // Probe: a kernel launch fails here, with a clear message, when this build has no code for
  // the device's architecture.
  {
    GUFO_ASSIGN_OR_RETURN(DeviceMemory probe, DeviceMemory::allocate(sizeof(float), "probe"));
    GUFO_GPU_RETURN_IF_ERROR(gpu::memset_async(probe.get(), 0, sizeof(float), nullptr), context);
    const Status ran = scale_add_f32(probe.get<float>(), probe.get<float>(), 1, 1.0f, 0.0f, nullptr);
    const gpu::error_t synced = gpu::device_synchronize();
    if (!ran.ok() || synced != gpu::success) {
      gpu::clear_last_error();
      return Error{context + " (" + devices[static_cast<size_t>(index)].name + ", sm_" +
                       std::to_string(devices[static_cast<size_t>(index)].cc_major) +
                       std::to_string(devices[static_cast<size_t>(index)].cc_minor) +
                       "): this gufo has no GPU code for it (" +
                       (ran.ok() ? gpu::error_string(synced) : ran.error().message) +
                       "); rebuild with CMAKE_CUDA_ARCHITECTURES for this device",
                   ErrorKind::Unsupported};
    }
  }
  gpu::stream_t stream = nullptr;
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_create(&stream), context);
  auto backend = std::make_unique<CudaBackend>(index, devices[static_cast<size_t>(index)], stream);
  // NOTE(cuda_graphs): GUFO_CUDA_GRAPHS=0 launches every step eagerly; the numbers are the
  // same either way (tests/gpu/cuda_forward_test.cpp compares them), only the speed differs.
  const char* graphs = std::getenv("GUFO_CUDA_GRAPHS");
  backend->set_graphs(graphs == nullptr || std::string(graphs) != "0");
  const char* profile = std::getenv("GUFO_CUDA_PROFILE");
  backend->set_profile(profile != nullptr && std::string(profile) == "1");
  // NOTE(fusion): GUFO_CUDA_FUSE=0 runs every node alone (fusion_plan.h); the numbers are the
  // same either way (tests/gpu/cuda_forward_test.cpp compares them), only the speed differs.
  const char* fuse = std::getenv("GUFO_CUDA_FUSE");
  backend->set_fusion(fuse == nullptr || std::string(fuse) != "0");
  return std::unique_ptr<backend::Backend>(std::move(backend));
}

}  // namespace gufo::cuda
