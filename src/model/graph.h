// The forward pass as data: a small vocabulary of ops recorded by GraphBuilder, run by any
// backend (backend/backend.h). Activations are 2-D f32 [rows = tokens, cols]; a head layout
// is a view of cols (n_head * head_dim). Every node has a stable name ("blk.3.attn_out") so
// two backends or two builds can be compared tensor by tensor.
// Tested end to end by tests/unit/model/forward_test.cpp and moe_test.cpp (logits against
// Hugging Face transformers).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/result.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace gufo::model {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

enum class Op {
  Tokens,      // the batch's token ids (int32) -> [n_tokens, 1]
  Weight,      // a model tensor, [ne1, ne0] (rows, cols); read only
  GetRows,     // src0 weight [n_vocab, n_embd], src1 Tokens -> [n_tokens, n_embd]
  RmsNorm,     // src0 x [r, c], src1 weight [group]: each group of c normalized, times weight
  MatMul,      // src0 x [r, k], src1 weight [n, k] -> [r, n] = x · weightᵀ
  Add,         // src0 [r, c] + src1 [r, c] or a row [c] broadcast over rows
  Rope,        // src0 x [r, n_heads * head_dim], src1 freq factors [head_dim/2] or none
  Attention,   // src0 q, src1 k, src2 v (roped) -> [r, n_head * head_dim]; writes the KV cache
  SwiGlu,      // silu(src0) * src1, same shapes
  OutputRows,  // src0 [r, c] -> the rows the batch wants logits for [n_outputs, c]
  MoeFfn,      // mixture of SwiGLU experts: src0 x [r, c], src1 router logits [r, n_expert],
               // src2/3/4 expert stacks gate, up [n_expert, n_ff_exp, c] and down
               // [n_expert, c, n_ff_exp] -> [r, c]
};

std::string_view op_name(Op op);

struct RmsNormParams {
  float eps = 1e-6f;
  int64_t group = 0;  // the normalized width: cols, or head_dim for per-head q/k norm
};

struct RopeParams {
  int64_t head_dim = 0;
  RopeType type = RopeType::Neox;
  float theta = 10000.0f;
};

struct AttentionParams {
  int32_t layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;  // softmax(q·k * scale)
};

// Per row: softmax over the router logits, the n_expert_used most probable experts (ties go
// to the lower index), their probabilities renormalized to sum to 1 when norm_topk; the
// output is Σ p_e · down_e(silu(gate_e(x)) * up_e(x)) (backend/cpu/ops/moe.h has the maths).
struct MoeParams {
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;  // each expert's hidden width
  bool norm_topk = true;
};

using OpParams = std::variant<std::monostate, RmsNormParams, RopeParams, AttentionParams, MoeParams>;

inline constexpr size_t kMaxSrc = 5;  // MoeFfn's x, router logits and three expert stacks

struct Node {
  Op op = Op::Tokens;
  std::array<NodeId, kMaxSrc> src = {kNoNode, kNoNode, kNoNode, kNoNode, kNoNode};
  int64_t rows = 0;
  int64_t cols = 0;
  const Weight* weight = nullptr;  // Op::Weight only (a 3-D expert stack: weight->n_expert > 1)
  OpParams params;
  std::string name;
};

// What a graph's output rows are: logits [n_outputs, n_vocab] (generation, scoring), or the
// final normalized hidden state [n_outputs, n_embd] that embeddings are pooled from.
enum class GraphOutput { Logits, Hidden };

struct Graph {
  std::vector<Node> nodes;  // topological order: sources come before their users
  NodeId output = kNoNode;  // logits [n_outputs, n_vocab], or the hidden state (output_kind)
  GraphOutput output_kind = GraphOutput::Logits;
  int64_t n_tokens = 0;
  int64_t n_outputs = 0;
};

// The shape one forward call is built for.
struct BatchShape {
  int64_t n_tokens = 0;
  int64_t n_outputs = 0;  // rows of output wanted (1 for decode, n_tokens to score a text)
  GraphOutput output = GraphOutput::Logits;
};

// Records nodes and checks shapes as they are added; the first error is kept and returned
// by finish(), so model code reads top to bottom without error plumbing on every line.
class GraphBuilder {
 public:
  GraphBuilder(const WeightTable& weights, BatchShape shape);

  NodeId tokens();
  NodeId weight(const std::string& name);           // required, a matrix or vector
  NodeId optional_weight(const std::string& name);  // kNoNode when absent
  NodeId expert_weights(const std::string& name);   // required, a 3-D stack of experts
  NodeId get_rows(NodeId table, NodeId ids, std::string name);
  NodeId rms_norm(NodeId x, NodeId w, RmsNormParams params, std::string name);
  NodeId mat_mul(NodeId x, NodeId w, std::string name);
  NodeId add(NodeId a, NodeId b, std::string name);
  NodeId rope(NodeId x, NodeId freq_factors, RopeParams params, std::string name);
  NodeId attention(NodeId q, NodeId k, NodeId v, AttentionParams params, std::string name);
  NodeId swiglu(NodeId gate, NodeId up, std::string name);
  NodeId output_rows(NodeId x, std::string name);
  NodeId moe_ffn(NodeId x, NodeId router_logits, NodeId gate_exps, NodeId up_exps, NodeId down_exps, MoeParams params,
                 std::string name);

  const Node& node(NodeId id) const { return graph_.nodes[static_cast<size_t>(id)]; }
  Result<Graph> finish(NodeId output);

 private:
  NodeId push(Node node);
  bool valid(NodeId id) const;
  void fail(std::string message);

  const WeightTable& weights_;
  Graph graph_;
  std::string error_;
};

}  // namespace gufo::model
