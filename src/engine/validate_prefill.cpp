// validate_prefill and kl_divergence (see validate_prefill.h).
#include "engine/validate_prefill.h"

#include <algorithm>
#include <cmath>

namespace gufo::engine {

namespace {

// log-softmax in double: log p_i = x_i - max - log Σ exp(x_j - max).
std::vector<double> log_softmax(std::span<const float> logits) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
  const double log_sum = std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - max - log_sum;
  return out;
}

}  // namespace

double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits) {
  const std::vector<double> log_p = log_softmax(p_logits);
  const std::vector<double> log_q = log_softmax(q_logits);
  double kl = 0.0;
  for (size_t i = 0; i < log_p.size(); ++i) kl += std::exp(log_p[i]) * (log_p[i] - log_q[i]);
  return std::max(kl, 0.0);
}

Result<PrefillReport> validate_prefill(const Model& model, backend::Backend& backend, std::span<const int32_t> prompt,
                                       DType cache_type) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  GUFO_ASSIGN_OR_RETURN(Session batch, Session::create(model, backend, n, cache_type));
  GUFO_ASSIGN_OR_RETURN(Session step, Session::create(model, backend, n, cache_type));
  GUFO_ASSIGN_OR_RETURN(std::vector<float> all, batch.eval(prompt, /*all_logits=*/true));
  const size_t n_vocab = static_cast<size_t>(model.hparams().n_vocab);
  PrefillReport report;
  for (int64_t i = 0; i < n; ++i) {
    GUFO_ASSIGN_OR_RETURN(std::vector<float> one, step.eval(prompt.subspan(static_cast<size_t>(i), 1), false));
    const std::span<const float> row(all.data() + static_cast<size_t>(i) * n_vocab, n_vocab);
    PrefillPosition pos;
    for (size_t v = 0; v < n_vocab; ++v) {
      pos.max_abs_diff = std::max(pos.max_abs_diff, std::abs(static_cast<double>(row[v]) - one[v]));
      pos.max_abs_logit = std::max(pos.max_abs_logit, std::abs(static_cast<double>(row[v])));
    }
    pos.kl = kl_divergence(row, one);
    if (pos.max_abs_diff > kValidateMaxAbsLogitRel * std::max(pos.max_abs_logit, 1.0) || pos.kl > kValidateMaxKl ||
        !std::isfinite(pos.kl)) {
      report.ok = false;
    }
    report.positions.push_back(pos);
  }
  return report;
}

}  // namespace gufo::engine
