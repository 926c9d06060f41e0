// The CudaBackend class, shared by the files that define its members: cuda_backend.cpp (plans,
// memory, the forward and its CUDA graphs) and cuda_backend_nodes.cpp (what each graph node
// and fused run launches). Internal to backend/cuda: the rest of Gufo sees cuda_backend.h.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/activation_plan.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/device_weights.h"
#include "backend/cuda/fusion_plan.h"
#include "backend/cuda/kv_cache.h"
#include "backend/cuda/node_profile.h"
#include "backend/cuda/ops/ops.h"
#include "model/graph.h"

namespace gufo::cuda {

// An Attention node's head layout.
AttentionShape attention_shape(const model::Node& node);

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
    const std::string sm = "sm_" + std::to_string(info_.cc_major) + std::to_string(info_.cc_minor);
    return {.backend = "CUDA",
            .threads = 1,
            .device = "cuda:" + std::to_string(index_) + " (" + info_.name + ", " + sm + ")",
            .batch_invariant = true,
            .device_memory = true,
            .numerics = "CUDA " + info_.name + " " + sm};
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

}  // namespace gufo::cuda
