// CudaBackend (see cuda_backend.h). A forward uploads the batch (token ids, positions,
// sequence ids, output rows) to fixed device buffers, runs the graph node by node on one
// stream into an activation arena planned per batch shape (activation_plan.h), and copies
// back the logits or the argmax. Small batches are captured as a CUDA graph the second time
// their shape comes, and replayed after: every launch of a forward depends on the shape and
// the cache alone (attention sizes its splits from the cache's context, not the batch), so a
// replay computes exactly what the launches would. What each node launches is in
// cuda_backend_nodes.cpp; the class, shared by both, in cuda_backend_impl.h.
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
#include "backend/cuda/cuda_backend_impl.h"
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

}  // namespace

AttentionShape attention_shape(const model::Node& node) {
  const auto& p = std::get<model::AttentionParams>(node.params);
  return {.n_head = p.n_head, .n_head_kv = p.n_head_kv, .head_dim = p.head_dim, .scale = p.scale};
}

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
