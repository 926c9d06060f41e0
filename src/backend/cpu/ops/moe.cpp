// Mixture-of-experts routing and FFN (see moe.h).
#include "backend/cpu/ops/moe.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "backend/cpu/ops/ops.h"

namespace gufo::cpu {

void route_token(const float* logits, int64_t n_expert, int64_t n_used, bool normalize, std::span<float> probs,
                 std::span<ExpertChoice> out) {
  float max = logits[0];
  for (int64_t e = 1; e < n_expert; ++e) max = std::max(max, logits[e]);
  float sum = 0.0f;
  for (int64_t e = 0; e < n_expert; ++e) {
    probs[e] = std::exp(logits[e] - max);
    sum += probs[e];
  }
  for (int64_t e = 0; e < n_expert; ++e) probs[e] /= sum;

  // Top-k by selection: k is small (2..8). A strict '>' keeps the lower index on ties, and
  // starting from "none" makes NaN probabilities still pick a valid, unused expert.
  float chosen_sum = 0.0f;
  for (int64_t slot = 0; slot < n_used; ++slot) {
    int64_t best = -1;
    for (int64_t e = 0; e < n_expert; ++e) {
      const bool taken =
          std::any_of(out.begin(), out.begin() + slot, [e](const ExpertChoice& c) { return c.expert == e; });
      if (!taken && (best < 0 || probs[e] > probs[best])) best = e;
    }
    out[slot] = {.expert = static_cast<int32_t>(best), .weight = probs[best]};
    chosen_sum += probs[best];
  }
  if (normalize) {
    for (int64_t slot = 0; slot < n_used; ++slot) out[slot].weight /= chosen_sum;
  }
}

Status moe_ffn(ThreadPool& pool, const float* x, int64_t rows, const float* router_logits, const MoeExperts& experts,
               int64_t n_used, bool normalize, float* out) {
  const int64_t n_expert = experts.gate->n_expert;
  const int64_t n_embd = experts.gate->cols;
  const int64_t n_ff = experts.gate->rows;

  // Which rows go to which expert, with what weight (rows ascending within each expert).
  std::vector<std::vector<std::pair<int64_t, float>>> routed(static_cast<size_t>(n_expert));
  std::vector<float> probs(static_cast<size_t>(n_expert));
  std::vector<ExpertChoice> choices(static_cast<size_t>(n_used));
  for (int64_t r = 0; r < rows; ++r) {
    route_token(router_logits + r * n_expert, n_expert, n_used, normalize, probs, choices);
    for (const ExpertChoice& c : choices) routed[static_cast<size_t>(c.expert)].emplace_back(r, c.weight);
  }

  std::fill(out, out + rows * n_embd, 0.0f);
  std::vector<float> xe, gate, up, down;
  for (int64_t e = 0; e < n_expert; ++e) {
    const auto& mine = routed[static_cast<size_t>(e)];
    const auto m = static_cast<int64_t>(mine.size());
    if (m == 0) continue;
    xe.resize(static_cast<size_t>(m * n_embd));
    for (int64_t i = 0; i < m; ++i) std::copy_n(x + mine[i].first * n_embd, n_embd, xe.data() + i * n_embd);
    gate.resize(static_cast<size_t>(m * n_ff));
    up.resize(gate.size());
    down.resize(xe.size());
    GUFO_RETURN_IF_ERROR(mat_mul_fast(pool, xe.data(), m, n_embd, model::expert(*experts.gate, e), gate.data()));
    GUFO_RETURN_IF_ERROR(mat_mul_fast(pool, xe.data(), m, n_embd, model::expert(*experts.up, e), up.data()));
    swiglu(gate.data(), up.data(), m * n_ff, gate.data());  // elementwise, so in place is safe
    GUFO_RETURN_IF_ERROR(mat_mul_fast(pool, gate.data(), m, n_ff, model::expert(*experts.down, e), down.data()));
    for (int64_t i = 0; i < m; ++i) {
      float* row = out + mine[i].first * n_embd;
      const float w = mine[i].second;
      for (int64_t c = 0; c < n_embd; ++c) row[c] += w * down[static_cast<size_t>(i * n_embd + c)];
    }
  }
  return {};
}

}  // namespace gufo::cpu
