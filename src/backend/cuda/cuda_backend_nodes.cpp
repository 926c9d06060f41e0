// CudaBackend's node runners (see cuda_backend_impl.h): what each graph node, and each fused
// run of nodes (fusion_plan.h), launches on the backend's stream, with the activations,
// scratch and KV cache layer it reads and writes.
#include "backend/cuda/cuda_backend_impl.h"

#include <string>
#include <vector>

#include "backend/cuda/alignment.h"
#include "backend/cuda/check.cuh"

namespace gufo::cuda {

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

}  // namespace gufo::cuda
