// Sampler (see sampler.h).
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <unordered_map>

namespace gufo::engine {

Status validate(const SamplerParams& p) {
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) return Error{"temperature must be >= 0"};
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return Error{"top_p must be in (0, 1]"};
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return Error{"min_p must be in [0, 1]"};
  if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty)) return Error{"repeat_penalty must be > 0"};
  if (!std::isfinite(p.presence_penalty)) return Error{"presence_penalty must be finite"};
  if (!std::isfinite(p.frequency_penalty)) return Error{"frequency_penalty must be finite"};
  if (p.penalty_last_n < 0) return Error{"penalty_last_n must be >= 0"};
  for (const auto& [id, bias] : p.logit_bias) {
    if (!std::isfinite(bias)) return Error{"logit_bias values must be finite"};
  }
  return {};
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {}

void Sampler::accept(int32_t token) { history_.push_back(token); }

std::string Sampler::generator_state() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

Status Sampler::restore_generator(std::string_view state) {
  std::istringstream in{std::string(state)};
  std::mt19937_64 restored;
  in >> restored;
  if (in.fail() || !(in >> std::ws).eof()) return Error{"not a generator state (std::mt19937_64 text)"};
  rng_ = restored;
  return {};
}

double Sampler::uniform() {
  // NOTE(sampler): the top 53 bits as a fraction, identical on every standard library.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

namespace {

// Descending logits, the lower id first among equals: the one order every step sorts by.
constexpr auto by_logit = [](const auto& a, const auto& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
};

}  // namespace

int32_t Sampler::sample(std::span<const float> logits) {
  load_candidates(logits);
  apply_penalties();
  if (params_.temperature <= 0.0f) return std::min_element(candidates_.begin(), candidates_.end(), by_logit)->id;
  size_t sorted = keep_top_k();
  float max_logit = candidates_.front().logit;
  if (sorted == 0) {
    for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  }
  // Probabilities at temperature 1 decide top-p and min-p (as llama.cpp's default chain).
  if (params_.top_p < 1.0f) keep_top_p(max_logit, sorted);
  if (params_.min_p > 0.0f) keep_min_p(max_logit);
  return draw(max_logit);
}

void Sampler::load_candidates(std::span<const float> logits) {
  candidates_.clear();
  candidates_.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    candidates_.push_back({static_cast<int32_t>(i), logits[i]});
  }
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id >= 0 && static_cast<size_t>(id) < candidates_.size()) candidates_[static_cast<size_t>(id)].logit += bias;
  }
}

// Penalties over the last penalty_last_n tokens.
void Sampler::apply_penalties() {
  const size_t n_recent = std::min(history_.size(), static_cast<size_t>(params_.penalty_last_n));
  if (n_recent == 0 ||
      (params_.repeat_penalty == 1.0f && params_.presence_penalty == 0.0f && params_.frequency_penalty == 0.0f)) {
    return;
  }
  std::unordered_map<int32_t, int> counts;
  for (size_t i = history_.size() - n_recent; i < history_.size(); ++i) ++counts[history_[i]];
  for (const auto& [id, count] : counts) {
    if (id < 0 || static_cast<size_t>(id) >= candidates_.size()) continue;
    float& logit = candidates_[static_cast<size_t>(id)].logit;
    logit = logit > 0.0f ? logit / params_.repeat_penalty : logit * params_.repeat_penalty;
    logit -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

// NOTE(sampler): only as much of the vocabulary is sorted as a filter needs (top-k: k;
// top-p: a head grown until it holds the mass); a server samples every sequence of every
// step on one thread, and sorting 150k logits each time cost more than the forward pass.
size_t Sampler::keep_top_k() {
  if (params_.top_k <= 0 || static_cast<size_t>(params_.top_k) >= candidates_.size()) return 0;
  const auto keep = static_cast<size_t>(params_.top_k);
  std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep), candidates_.end(),
                    by_logit);
  candidates_.resize(keep);
  return keep;
}

// The smallest head of the sorted candidates whose mass reaches top_p; the head that is sorted
// grows fourfold from 64 (or from top-k's) until it holds the mass.
void Sampler::keep_top_p(float max_logit, size_t sorted) {
  const size_t keep = candidates_.size();
  double sum = 0.0;
  for (const Candidate& c : candidates_) sum += std::exp(static_cast<double>(c.logit - max_logit));
  for (size_t head = sorted > 0 ? sorted : std::min<size_t>(keep, 64);; head = std::min(keep, head * 4)) {
    if (head > sorted) {
      std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(head), candidates_.end(),
                        by_logit);
      sorted = head;
    }
    double cumulative = 0.0;
    for (size_t i = 0; i < head; ++i) {
      cumulative += std::exp(static_cast<double>(candidates_[i].logit - max_logit)) / sum;
      if (cumulative >= params_.top_p) {
        candidates_.resize(i + 1);
        return;
      }
    }
    if (head == keep) return;  // rounding: the whole mass falls short of top_p; keep everything
  }
}

// p_i / p_max = e^(l_i - l_max): no normalization needed. The order is kept.
void Sampler::keep_min_p(float max_logit) {
  const auto min_p = static_cast<double>(params_.min_p);
  std::erase_if(candidates_,
                [&](const Candidate& c) { return std::exp(static_cast<double>(c.logit - max_logit)) < min_p; });
}

// Temperature, then one draw over what is left (in its current order, fixed by the steps
// before, so the same seed gives the same token).
int32_t Sampler::draw(float max_logit) {
  const size_t cut = candidates_.size();
  weights_.resize(cut);
  double total = 0.0;
  for (size_t i = 0; i < cut; ++i) {
    total += weights_[i] = std::exp(static_cast<double>(candidates_[i].logit - max_logit) / params_.temperature);
  }
  double r = uniform() * total;
  for (size_t i = 0; i < cut; ++i) {
    r -= weights_[i];
    if (r < 0.0) return candidates_[i].id;
  }
  // Rounding left r at or above 0: the last candidate that can be drawn (a masked one, weight
  // 0, never; constrained decoding relies on it).
  for (size_t i = cut; i-- > 0;) {
    if (weights_[i] > 0.0) return candidates_[i].id;
  }
  return candidates_[cut - 1].id;
}

}  // namespace gufo::engine
