// The decoder (see decoder.h). Reads top to bottom like the maths:
//   x = embed(tokens)
//   for each layer: x += attention(norm(x)); x += ffn(norm(x))   (ffn: dense or experts)
//   logits = output(norm(x))
#include "model/decoder.h"

#include <cmath>
#include <string>

namespace gufo::model {

namespace {

std::string blk(int64_t layer, const char* name) { return "blk." + std::to_string(layer) + "." + name; }

// Projection with an optional bias: x · Wᵀ (+ b).
NodeId project(GraphBuilder& b, NodeId x, int64_t layer, const char* weight, bool bias) {
  NodeId y = b.mat_mul(x, b.weight(blk(layer, weight) + ".weight"), blk(layer, weight));
  if (bias) y = b.add(y, b.weight(blk(layer, weight) + ".bias"), blk(layer, weight) + "_biased");
  return y;
}

// x: [n_tokens, n_embd] (already normalized) -> [n_tokens, n_embd]
NodeId attention_block(GraphBuilder& b, const HParams& hp, const DecoderOptions& opt, int64_t layer, NodeId x,
                       NodeId rope_freqs) {
  NodeId q = project(b, x, layer, "attn_q", opt.qkv_bias);  // [n_tokens, n_head * head_dim]
  NodeId k = project(b, x, layer, "attn_k", opt.qkv_bias);  // [n_tokens, n_head_kv * head_dim]
  NodeId v = project(b, x, layer, "attn_v", opt.qkv_bias);  // [n_tokens, n_head_kv * head_dim]
  if (opt.qk_norm) {
    const RmsNormParams per_head{.eps = hp.rms_eps, .group = hp.head_dim};
    q = b.rms_norm(q, b.weight(blk(layer, "attn_q_norm.weight")), per_head, blk(layer, "q_normed"));
    k = b.rms_norm(k, b.weight(blk(layer, "attn_k_norm.weight")), per_head, blk(layer, "k_normed"));
  }
  const RopeParams rope{.head_dim = hp.head_dim, .type = opt.rope, .theta = hp.rope_theta};
  q = b.rope(q, rope_freqs, rope, blk(layer, "q_roped"));
  k = b.rope(k, rope_freqs, rope, blk(layer, "k_roped"));
  const AttentionParams attn{.layer = static_cast<int32_t>(layer),
                             .n_head = hp.n_head,
                             .n_head_kv = hp.n_head_kv,
                             .head_dim = hp.head_dim,
                             .scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim))};
  const NodeId heads = b.attention(q, k, v, attn, blk(layer, "attn_heads"));  // [n_tokens, n_head * head_dim]
  return b.mat_mul(heads, b.weight(blk(layer, "attn_output.weight")), blk(layer, "attn_out"));
}

// SwiGLU feed-forward: down(silu(gate(x)) * up(x)). x: [n_tokens, n_embd] -> [n_tokens, n_embd]
NodeId ffn_block(GraphBuilder& b, int64_t layer, NodeId x) {
  const NodeId gate =
      b.mat_mul(x, b.weight(blk(layer, "ffn_gate.weight")), blk(layer, "ffn_gate"));            // [n_tokens, n_ff]
  const NodeId up = b.mat_mul(x, b.weight(blk(layer, "ffn_up.weight")), blk(layer, "ffn_up"));  // [n_tokens, n_ff]
  const NodeId act = b.swiglu(gate, up, blk(layer, "ffn_act"));
  return b.mat_mul(act, b.weight(blk(layer, "ffn_down.weight")), blk(layer, "ffn_out"));
}

// Mixture of SwiGLU experts: the router scores every expert per token, the top n_expert_used
// run, their outputs weighted by the routing probabilities. x: [n_tokens, n_embd] -> same.
NodeId moe_ffn_block(GraphBuilder& b, const HParams& hp, int64_t layer, NodeId x) {
  const NodeId router = b.weight(blk(layer, "ffn_gate_inp.weight"));         // [n_expert, n_embd]
  const NodeId gate = b.expert_weights(blk(layer, "ffn_gate_exps.weight"));  // [n_expert, n_ff_exp, n_embd]
  const NodeId up = b.expert_weights(blk(layer, "ffn_up_exps.weight"));      // [n_expert, n_ff_exp, n_embd]
  const NodeId down = b.expert_weights(blk(layer, "ffn_down_exps.weight"));  // [n_expert, n_embd, n_ff_exp]
  const NodeId logits = b.mat_mul(x, router, blk(layer, "ffn_moe_logits"));  // [n_tokens, n_expert]
  const MoeParams moe{.n_expert = hp.n_expert,
                      .n_expert_used = hp.n_expert_used,
                      .n_ff_exp = hp.n_ff_exp,
                      .norm_topk = hp.expert_weights_norm};
  return b.moe_ffn(x, logits, gate, up, down, moe, blk(layer, "ffn_out"));
}

}  // namespace

Result<Graph> build_decoder(const HParams& hp, const WeightTable& weights, BatchShape shape) {
  const DecoderOptions opt = decoder_options(hp.arch);
  GraphBuilder b(weights, shape);
  const RmsNormParams norm{.eps = hp.rms_eps, .group = hp.n_embd};
  const NodeId token_embd = b.weight("token_embd.weight");           // [n_vocab, n_embd]
  const NodeId rope_freqs = b.optional_weight("rope_freqs.weight");  // [head_dim / 2] or none

  NodeId x = b.get_rows(token_embd, b.tokens(), "embd");  // [n_tokens, n_embd]
  for (int64_t layer = 0; layer < hp.n_layer; ++layer) {
    const NodeId attn_in = b.rms_norm(x, b.weight(blk(layer, "attn_norm.weight")), norm, blk(layer, "attn_in"));
    x = b.add(x, attention_block(b, hp, opt, layer, attn_in, rope_freqs), blk(layer, "attn_residual"));
    const NodeId ffn_in = b.rms_norm(x, b.weight(blk(layer, "ffn_norm.weight")), norm, blk(layer, "ffn_in"));
    const NodeId ffn = opt.moe ? moe_ffn_block(b, hp, layer, ffn_in) : ffn_block(b, layer, ffn_in);
    x = b.add(x, ffn, blk(layer, "ffn_residual"));
  }
  // Only the rows that need logits go through the output norm and the vocab projection.
  x = b.output_rows(x, "result_rows");
  x = b.rms_norm(x, b.weight("output_norm.weight"), norm, "result_norm");
  if (shape.output == GraphOutput::Hidden) return b.finish(x);                    // [n_outputs, n_embd]: embeddings
  const NodeId output = hp.tied_output ? token_embd : b.weight("output.weight");  // [n_vocab, n_embd]
  return b.finish(b.mat_mul(x, output, "logits"));                                // [n_outputs, n_vocab]
}

}  // namespace gufo::model
