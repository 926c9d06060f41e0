// Mixture-of-experts feed-forward on the CPU (qwen3moe): transformers' Qwen3MoeSparseMoeBlock
// and llama.cpp's build_moe_ffn with softmax gating. Routing first (per token: softmax over
// every expert, top-k, renormalize), then each expert runs once on all the rows routed to it,
// through mat_mul_fast on that expert's view of the stacked weights.
// Tested by tests/unit/model/moe_test.cpp (routing by hand, the FFN against a per-token
// reference) and end to end by tests/unit/model/forward_test.cpp (tiny-qwen3-moe).
#pragma once

#include <cstdint>
#include <span>

#include "backend/cpu/thread_pool.h"
#include "core/result.h"
#include "model/weights.h"

namespace gufo::cpu {

struct ExpertChoice {
  int32_t expert = 0;
  float weight = 0.0f;
};

// One token's routing. probs (n_expert floats) receives softmax(logits) computed in f32, as
// transformers does; out (n_used entries) receives the n_used most probable experts, most
// probable first, with their probabilities, renormalized to sum to 1 when `normalize`.
// NOTE(ties): equal probabilities go to the lower expert index. torch.topk leaves the order
// of ties unspecified; a fixed rule keeps one batch == token by token and CPU == GPU.
// Requires 1 <= n_used <= n_expert (GraphBuilder::moe_ffn checks it).
void route_token(const float* logits, int64_t n_expert, int64_t n_used, bool normalize, std::span<float> probs,
                 std::span<ExpertChoice> out);

// The three stacks of one layer, each n_expert matrices: gate and up [n_ff_exp, n_embd],
// down [n_embd, n_ff_exp] (rows, cols).
struct MoeExperts {
  const model::Weight* gate = nullptr;
  const model::Weight* up = nullptr;
  const model::Weight* down = nullptr;
};

// out[r, :] = Σ over r's chosen experts e of w_e · down_e(silu(gate_e(x_r)) * up_e(x_r)),
// summed in ascending expert order. x [rows, n_embd], router_logits [rows, n_expert],
// out [rows, n_embd].
Status moe_ffn(ThreadPool& pool, const float* x, int64_t rows, const float* router_logits, const MoeExperts& experts,
               int64_t n_used, bool normalize, float* out);

}  // namespace gufo::cpu
