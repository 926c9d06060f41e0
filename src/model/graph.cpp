// GraphBuilder: records nodes and checks their shapes (see graph.h).
#include "model/graph.h"

#include <initializer_list>
#include <utility>

namespace gufo::model {

namespace {

Node make_node(Op op, std::initializer_list<NodeId> src, int64_t rows, int64_t cols, std::string name) {
  Node node;
  node.op = op;
  size_t slot = 0;
  for (NodeId id : src) node.src[slot++] = id;  // the rest stay kNoNode
  node.rows = rows;
  node.cols = cols;
  node.name = std::move(name);
  return node;
}

// A tensor's shape as GGUF lists it, ne0 first: "[64, 32, 8]".
std::string ne_text(std::initializer_list<int64_t> ne) {
  std::string text = "[";
  for (int64_t n : ne) text += (text.size() > 1 ? ", " : "") + std::to_string(n);
  return text + "]";
}

}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::Tokens:
      return "tokens";
    case Op::Weight:
      return "weight";
    case Op::GetRows:
      return "get_rows";
    case Op::RmsNorm:
      return "rms_norm";
    case Op::MatMul:
      return "mat_mul";
    case Op::Add:
      return "add";
    case Op::Rope:
      return "rope";
    case Op::Attention:
      return "attention";
    case Op::SwiGlu:
      return "swiglu";
    case Op::OutputRows:
      return "output_rows";
    case Op::MoeFfn:
      return "moe_ffn";
  }
  return "?";
}

GraphBuilder::GraphBuilder(const WeightTable& weights, BatchShape shape) : weights_(weights) {
  graph_.n_tokens = shape.n_tokens;
  graph_.n_outputs = shape.n_outputs;
  graph_.output_kind = shape.output;
  if (shape.n_tokens < 1 || shape.n_outputs < 0 || shape.n_outputs > shape.n_tokens) {
    fail("batch of " + std::to_string(shape.n_tokens) + " tokens with " + std::to_string(shape.n_outputs) + " outputs");
  }
}

void GraphBuilder::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

bool GraphBuilder::valid(NodeId id) const { return id >= 0 && static_cast<size_t>(id) < graph_.nodes.size(); }

NodeId GraphBuilder::push(Node node) {
  graph_.nodes.push_back(std::move(node));
  return static_cast<NodeId>(graph_.nodes.size() - 1);
}

NodeId GraphBuilder::tokens() {
  Node n = make_node(Op::Tokens, {kNoNode, kNoNode, kNoNode}, graph_.n_tokens, 1, "tokens");
  return push(std::move(n));
}

NodeId GraphBuilder::optional_weight(const std::string& name) {
  const Weight* w = weights_.find(name);
  if (w == nullptr) return kNoNode;
  if (w->n_expert != 1) {
    fail(weights_.source() + ": tensor '" + name + "' is a 3-D stack " + ne_text({w->cols, w->rows, w->n_expert}) +
         ", expected a matrix or vector");
    return kNoNode;
  }
  Node n = make_node(Op::Weight, {kNoNode, kNoNode, kNoNode}, w->rows, w->cols, name);
  n.weight = w;
  return push(std::move(n));
}

NodeId GraphBuilder::weight(const std::string& name) {
  const NodeId id = optional_weight(name);
  if (id == kNoNode) fail(weights_.source() + ": missing tensor '" + name + "'");
  return id;
}

NodeId GraphBuilder::expert_weights(const std::string& name) {
  const Weight* w = weights_.find(name);
  if (w == nullptr) {
    fail(weights_.source() + ": missing tensor '" + name + "'");
    return kNoNode;
  }
  Node n = make_node(Op::Weight, {kNoNode, kNoNode, kNoNode}, w->rows, w->cols, name);
  n.weight = w;
  return push(std::move(n));
}

NodeId GraphBuilder::get_rows(NodeId table, NodeId ids, std::string name) {
  if (!valid(table) || !valid(ids)) return kNoNode;
  Node n = make_node(Op::GetRows, {table, ids, kNoNode}, node(ids).rows, node(table).cols, std::move(name));
  return push(std::move(n));
}

NodeId GraphBuilder::rms_norm(NodeId x, NodeId w, RmsNormParams params, std::string name) {
  if (!valid(x) || !valid(w)) return kNoNode;
  const Node& wn = node(w);
  if (wn.rows != 1 || wn.cols != params.group || params.group < 1 || node(x).cols % params.group != 0) {
    fail(weights_.source() + ": tensor '" + wn.name + "' must be [" + std::to_string(params.group) + "] to normalize " +
         name + ", found [" + std::to_string(wn.cols) + ", " + std::to_string(wn.rows) + "]");
    return kNoNode;
  }
  Node n = make_node(Op::RmsNorm, {x, w, kNoNode}, node(x).rows, node(x).cols, std::move(name));
  n.params = params;
  return push(std::move(n));
}

NodeId GraphBuilder::mat_mul(NodeId x, NodeId w, std::string name) {
  if (!valid(x) || !valid(w)) return kNoNode;
  const Node& wn = node(w);
  if (wn.cols != node(x).cols) {
    fail(weights_.source() + ": tensor '" + wn.name + "' has " + std::to_string(wn.cols) + " columns (ne0) but " +
         name + " multiplies it with width " + std::to_string(node(x).cols));
    return kNoNode;
  }
  Node n = make_node(Op::MatMul, {x, w, kNoNode}, node(x).rows, wn.rows, std::move(name));
  return push(std::move(n));
}

NodeId GraphBuilder::add(NodeId a, NodeId b, std::string name) {
  if (!valid(a) || !valid(b)) return kNoNode;
  const Node& bn = node(b);
  if (bn.cols != node(a).cols || (bn.rows != 1 && bn.rows != node(a).rows)) {
    fail(weights_.source() + ": cannot add '" + bn.name + "' [" + std::to_string(bn.cols) + ", " +
         std::to_string(bn.rows) + "] to " + name + " of width " + std::to_string(node(a).cols));
    return kNoNode;
  }
  Node n = make_node(Op::Add, {a, b, kNoNode}, node(a).rows, node(a).cols, std::move(name));
  return push(std::move(n));
}

NodeId GraphBuilder::rope(NodeId x, NodeId freq_factors, RopeParams params, std::string name) {
  if (!valid(x)) return kNoNode;
  if (params.head_dim < 2 || params.head_dim % 2 != 0 || node(x).cols % params.head_dim != 0) {
    fail("rope " + name + ": width " + std::to_string(node(x).cols) + " is not a multiple of head_dim " +
         std::to_string(params.head_dim));
    return kNoNode;
  }
  if (freq_factors != kNoNode && (node(freq_factors).rows != 1 || node(freq_factors).cols != params.head_dim / 2)) {
    fail(weights_.source() + ": tensor '" + node(freq_factors).name + "' must be [" +
         std::to_string(params.head_dim / 2) + "]");
    return kNoNode;
  }
  Node n = make_node(Op::Rope, {x, freq_factors, kNoNode}, node(x).rows, node(x).cols, std::move(name));
  n.params = params;
  return push(std::move(n));
}

NodeId GraphBuilder::attention(NodeId q, NodeId k, NodeId v, AttentionParams params, std::string name) {
  if (!valid(q) || !valid(k) || !valid(v)) return kNoNode;
  if (node(q).cols != params.n_head * params.head_dim || node(k).cols != params.n_head_kv * params.head_dim ||
      node(v).cols != node(k).cols) {
    fail("attention " + name + ": q, k, v widths do not match the head counts");
    return kNoNode;
  }
  Node n = make_node(Op::Attention, {q, k, v}, node(q).rows, params.n_head * params.head_dim, std::move(name));
  n.params = params;
  return push(std::move(n));
}

NodeId GraphBuilder::swiglu(NodeId gate, NodeId up, std::string name) {
  if (!valid(gate) || !valid(up)) return kNoNode;
  if (node(gate).cols != node(up).cols) {
    fail("swiglu " + name + ": gate and up widths differ");
    return kNoNode;
  }
  Node n = make_node(Op::SwiGlu, {gate, up, kNoNode}, node(gate).rows, node(gate).cols, std::move(name));
  return push(std::move(n));
}

NodeId GraphBuilder::output_rows(NodeId x, std::string name) {
  if (!valid(x)) return kNoNode;
  Node n = make_node(Op::OutputRows, {x, kNoNode, kNoNode}, graph_.n_outputs, node(x).cols, std::move(name));
  return push(std::move(n));
}

NodeId GraphBuilder::moe_ffn(NodeId x, NodeId router_logits, NodeId gate_exps, NodeId up_exps, NodeId down_exps,
                             MoeParams params, std::string name) {
  for (NodeId id : {x, router_logits, gate_exps, up_exps, down_exps}) {
    if (!valid(id)) return kNoNode;
  }
  if (params.n_expert < 1 || params.n_expert_used < 1 || params.n_expert_used > params.n_expert ||
      params.n_ff_exp < 1) {
    fail("moe " + name + ": " + std::to_string(params.n_expert_used) + " of " + std::to_string(params.n_expert) +
         " experts of width " + std::to_string(params.n_ff_exp));
    return kNoNode;
  }
  const int64_t n_embd = node(x).cols;
  const Node& logits = node(router_logits);
  if (logits.rows != node(x).rows || logits.cols != params.n_expert) {
    // The router logits come from a mat_mul with the router tensor: name it.
    const std::string what =
        logits.op == Op::MatMul ? "tensor '" + node(logits.src[1]).name + "'" : "router " + logits.name;
    fail(weights_.source() + ": " + what + " gives " + std::to_string(logits.cols) +
         " router logits per token, expected one per expert (" + std::to_string(params.n_expert) + ")");
    return kNoNode;
  }
  // Each stack must be exactly [cols, rows, n_expert] (GGUF order, ne0 first).
  const auto check_stack = [&](NodeId id, int64_t cols, int64_t rows) {
    if (node(id).op != Op::Weight) {
      fail("moe " + name + ": " + node(id).name + " is not a weight");
      return false;
    }
    const Weight& w = *node(id).weight;
    if (w.cols != cols || w.rows != rows || w.n_expert != params.n_expert) {
      fail(weights_.source() + ": tensor '" + node(id).name + "' must be " + ne_text({cols, rows, params.n_expert}) +
           ", found " + ne_text({w.cols, w.rows, w.n_expert}));
      return false;
    }
    return true;
  };
  if (!check_stack(gate_exps, n_embd, params.n_ff_exp) || !check_stack(up_exps, n_embd, params.n_ff_exp) ||
      !check_stack(down_exps, params.n_ff_exp, n_embd)) {
    return kNoNode;
  }
  Node n =
      make_node(Op::MoeFfn, {x, router_logits, gate_exps, up_exps, down_exps}, node(x).rows, n_embd, std::move(name));
  n.params = params;
  return push(std::move(n));
}

Result<Graph> GraphBuilder::finish(NodeId output) {
  if (!error_.empty()) return Error{error_};
  if (!valid(output)) return Error{"graph has no output"};
  graph_.output = output;
  return std::move(graph_);
}

}  // namespace gufo::model
