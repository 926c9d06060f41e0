// plan_fusions (see fusion_plan.h).
#include "backend/cuda/fusion_plan.h"

#include <variant>

namespace gufo::cuda {

namespace {

bool computes(const model::Node& node) { return node.op != model::Op::Weight && node.op != model::Op::Tokens; }

const model::Node& at(const model::Graph& graph, model::NodeId id) { return graph.nodes[static_cast<size_t>(id)]; }

// The compute node after `id`, or kNoNode.
model::NodeId next_compute(const model::Graph& graph, model::NodeId id) {
  for (auto i = static_cast<size_t>(id) + 1; i < graph.nodes.size(); ++i) {
    if (computes(graph.nodes[i])) return static_cast<model::NodeId>(i);
  }
  return model::kNoNode;
}

bool whole_row_norm(const model::Node& node) {
  return node.op == model::Op::RmsNorm && std::get<model::RmsNormParams>(node.params).group == node.cols;
}

// The format every reader of `id` quantizes it to, or None when a reader is anything but an
// integer matmul, two readers want different formats, or the rows are not whole blocks.
FusedQuant readers_quant(const model::Graph& graph, model::NodeId id) {
  const int64_t cols = at(graph, id).cols;
  FusedQuant quant = FusedQuant::None;
  bool any = false;
  for (const model::Node& node : graph.nodes) {
    for (model::NodeId src : node.src) {
      if (src != id) continue;
      if (node.op != model::Op::MatMul || node.src[0] != id) return FusedQuant::None;
      const FusedQuant wanted = matmul_quant(at(graph, node.src[1]).weight->type);
      if (wanted == FusedQuant::None || (any && wanted != quant)) return FusedQuant::None;
      quant = wanted;
      any = true;
    }
  }
  if (cols % (quant == FusedQuant::Q8K ? 256 : 32) != 0) return FusedQuant::None;
  return quant;
}

// Add (two activations of one shape) then the RmsNorm of its sum.
bool add_norm_at(const model::Graph& graph, model::NodeId id, Fusion& run) {
  const model::Node& add = at(graph, id);
  if (add.op != model::Op::Add) return false;
  const model::Node& b = at(graph, add.src[1]);
  if (b.op == model::Op::Weight || b.rows != add.rows || at(graph, add.src[0]).rows != add.rows) return false;
  const model::NodeId norm = next_compute(graph, id);
  if (norm == model::kNoNode || !whole_row_norm(at(graph, norm)) || at(graph, norm).src[0] != id) return false;
  run = {.kind = FusionKind::AddNorm, .nodes = {id, norm}, .quant = readers_quant(graph, norm)};
  return true;
}

// RmsNorm(q), RmsNorm(k) per head, then Rope(q normed), Rope(k normed), neox, one head size.
bool qk_norm_rope_at(const model::Graph& graph, model::NodeId id, Fusion& run) {
  model::NodeId ids[4] = {id};
  for (int i = 1; i < 4; ++i) {
    ids[i] = next_compute(graph, ids[i - 1]);
    if (ids[i] == model::kNoNode) return false;
  }
  const model::Node& nq = at(graph, ids[0]);
  const model::Node& nk = at(graph, ids[1]);
  const model::Node& rq = at(graph, ids[2]);
  const model::Node& rk = at(graph, ids[3]);
  if (nq.op != model::Op::RmsNorm || nk.op != model::Op::RmsNorm || rq.op != model::Op::Rope ||
      rk.op != model::Op::Rope || rq.src[0] != ids[0] || rk.src[0] != ids[1] || nq.rows != nk.rows) {
    return false;
  }
  const int64_t head_dim = std::get<model::RmsNormParams>(nq.params).group;
  const auto& rope_q = std::get<model::RopeParams>(rq.params);
  const auto& rope_k = std::get<model::RopeParams>(rk.params);
  const bool same = std::get<model::RmsNormParams>(nk.params).group == head_dim && rope_q.head_dim == head_dim &&
                    rope_k.head_dim == head_dim && rope_q.type == model::RopeType::Neox &&
                    rope_k.type == model::RopeType::Neox && rope_q.theta == rope_k.theta && rq.src[1] == rk.src[1] &&
                    std::get<model::RmsNormParams>(nq.params).eps == std::get<model::RmsNormParams>(nk.params).eps;
  // NOTE(fusion): a lane group of 32 holds a head as 32 float4 pieces (Qwen3's 128) or fewer.
  if (!same || head_dim % 8 != 0 || head_dim > 128) return false;
  run = {.kind = FusionKind::QkNormRope, .nodes = {ids[0], ids[1], ids[2], ids[3]}};
  // The attention right after, reading these q and k and a v of k's width, stores through the run.
  const model::NodeId attention = next_compute(graph, ids[3]);
  if (attention != model::kNoNode) {
    const model::Node& node = at(graph, attention);
    const bool reads_run = node.op == model::Op::Attention && node.src[0] == ids[2] && node.src[1] == ids[3];
    if (reads_run && computes(at(graph, node.src[2])) && at(graph, node.src[2]).cols == rk.cols &&
        at(graph, node.src[2]).rows == rk.rows) {
      run.stores_kv_of = attention;
    }
  }
  return true;
}

// MatMul nodes in a row (kMaxFusedMatMuls at most) reading one input, integer weights of one type.
bool matmuls_at(const model::Graph& graph, model::NodeId id, Fusion& run) {
  const model::Node& first = at(graph, id);
  if (first.op != model::Op::MatMul) return false;
  const DType type = at(graph, first.src[1]).weight->type;
  if (matmul_quant(type) == FusedQuant::None) return false;
  std::vector<model::NodeId> nodes = {id};
  for (model::NodeId next = next_compute(graph, id); next != model::kNoNode; next = next_compute(graph, next)) {
    const model::Node& node = at(graph, next);
    const bool sibling =
        node.op == model::Op::MatMul && node.src[0] == first.src[0] && at(graph, node.src[1]).weight->type == type;
    if (!sibling || nodes.size() == static_cast<size_t>(kMaxFusedMatMuls)) break;
    nodes.push_back(next);
  }
  if (nodes.size() < 2) return false;
  run = {.kind = FusionKind::MatMuls, .nodes = std::move(nodes)};
  return true;
}

}  // namespace

FusedQuant matmul_quant(DType type) {
  switch (type) {
    case DType::Q8_0:
      return FusedQuant::Q8_0;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return FusedQuant::Q8K;
    default:
      return FusedQuant::None;
  }
}

FusionPlan plan_fusions(const model::Graph& graph, bool enabled) {
  const size_t n = graph.nodes.size();
  FusionPlan plan;
  plan.starts.assign(n, -1);
  plan.run_end.resize(n);
  plan.kv_stored.assign(n, false);
  for (size_t i = 0; i < n; ++i) plan.run_end[i] = static_cast<model::NodeId>(i);
  if (!enabled) return plan;
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<model::NodeId>(i);
    if (!computes(graph.nodes[i])) continue;
    Fusion run;
    const bool found = add_norm_at(graph, id, run) || qk_norm_rope_at(graph, id, run) || matmuls_at(graph, id, run);
    if (!found && (whole_row_norm(graph.nodes[i]) || graph.nodes[i].op == model::Op::SwiGlu) && graph.output != id) {
      const FusionKind kind = graph.nodes[i].op == model::Op::SwiGlu ? FusionKind::SwigluQuant : FusionKind::Norm;
      run = {.kind = kind, .nodes = {id}, .quant = readers_quant(graph, id)};
      if (run.quant == FusedQuant::None) continue;  // nothing to fuse with
    } else if (!found) {
      continue;
    }
    plan.starts[i] = static_cast<int>(plan.runs.size());
    for (model::NodeId member : run.nodes) plan.run_end[static_cast<size_t>(member)] = run.nodes.back();
    if (run.stores_kv_of != model::kNoNode) plan.kv_stored[static_cast<size_t>(run.stores_kv_of)] = true;
    i = static_cast<size_t>(run.nodes.back());
    plan.runs.push_back(std::move(run));
  }
  return plan;
}

}  // namespace gufo::cuda
