// DraftPolicy (see draft_policy.h).
#include "engine/draft_policy.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace gufo::engine {
namespace {

// Each trial weighs the acceptance seen before it by this much: the estimate follows the text
// as it changes (a quoted block, then free prose) within a few dozen tokens.
constexpr double kAcceptanceDecay = 0.9;
// Drafting must promise this many times plain decoding's tokens per second to be chosen.
constexpr double kDraftingMargin = 1.03;
// A plain step is timed again after this many drafting steps (a step's cost grows with the
// context), and first after this many.
constexpr int32_t kRetimePlainAfter = 32;
constexpr int32_t kFirstPlainAfter = 2;

}  // namespace

void DraftPolicy::RecentTimings::add(double seconds) {
  seconds_[static_cast<size_t>(next_)] = seconds;
  next_ = (next_ + 1) % static_cast<int>(seconds_.size());
  count_ = std::min(count_ + 1, static_cast<int>(seconds_.size()));
}

double DraftPolicy::RecentTimings::least() const {
  return *std::min_element(seconds_.begin(), seconds_.begin() + count_);
}

double DraftPolicy::RecentTimings::median() const {
  std::array<double, std::tuple_size_v<decltype(seconds_)>> sorted = seconds_;
  std::fill(sorted.begin() + count_, sorted.end(), std::numeric_limits<double>::infinity());
  std::sort(sorted.begin(), sorted.end());
  return sorted[static_cast<size_t>(count_ / 2)];
}

DraftPolicy::DraftPolicy(int32_t draft_min, int32_t draft_max)
    : draft_min_(draft_min), draft_max_(draft_max), steps_(static_cast<size_t>(draft_max) + 1) {}

double DraftPolicy::acceptance() const { return std::clamp(kept_ / trials_, 0.0, 0.999); }

double DraftPolicy::expected_tokens(int32_t length) const {
  // The drafts are kept up to the first refusal; the row after the last kept one yields a token
  // of its own: 1 + p + p^2 + ... + p^length.
  const double p = acceptance();
  double tokens = 0.0;
  double chance = 1.0;
  for (int32_t i = 0; i <= length; ++i) {
    tokens += chance;
    chance *= p;
  }
  return tokens;
}

bool DraftPolicy::costs_known() const {
  return !steps_[0].empty() && std::any_of(steps_.begin() + 1, steps_.end(), [](const auto& t) { return !t.empty(); });
}

double DraftPolicy::plain_seconds() const { return steps_[0].least(); }

// A length timed lately costs what it cost; one not timed, a plain step plus its rows at the
// cheapest row seen (rows get cheaper as a batch widens, so this is the hopeful guess that lets
// a longer draft be tried; once tried, its own timings decide).
double DraftPolicy::step_seconds(int32_t length, double cheapest_row) const {
  const RecentTimings& timed = steps_[static_cast<size_t>(length)];
  const double seconds = timed.empty() ? plain_seconds() + cheapest_row * length : timed.median();
  return std::max(seconds, 1e-12);
}

int32_t DraftPolicy::best_length() const {
  const double plain = plain_seconds();
  double cheapest_row = 0.0;
  bool any = false;
  for (int32_t length = 1; length <= draft_max_; ++length) {
    const RecentTimings& timed = steps_[static_cast<size_t>(length)];
    if (timed.empty()) continue;
    const double row = std::max(0.0, (timed.median() - plain) / length);
    cheapest_row = any ? std::min(cheapest_row, row) : row;
    any = true;
  }
  int32_t best = draft_min_;
  double best_rate = 0.0;
  for (int32_t length = draft_min_; length <= draft_max_; ++length) {
    const double rate = expected_tokens(length) / step_seconds(length, cheapest_row);
    // A longer draft must be worth more, not the same; and drafting at all clearly more than
    // plain decoding (timings are noisy, and a wrong guess to draft costs more than one not to).
    const double margin = best == 0 ? kDraftingMargin : 1.0001;
    if (length == draft_min_ || rate > best_rate * margin) {
      best = length;
      best_rate = rate;
    }
  }
  return best;
}

int32_t DraftPolicy::next_length() {
  const bool may_go_plain = draft_min_ == 0;
  if (!costs_known()) {
    // Hopeful until both kinds of step are timed; one plain step early on times the first.
    const bool time_plain = steps_[0].empty() && steps_since_plain_ >= kFirstPlainAfter;
    return may_go_plain && time_plain ? 0 : draft_max_;
  }
  if (may_go_plain && steps_since_plain_ >= kRetimePlainAfter) return 0;
  return best_length();
}

void DraftPolicy::record(int32_t proposed, int32_t kept, double seconds) {
  if (proposed < 0 || proposed > draft_max_) return;
  steps_[static_cast<size_t>(proposed)].add(seconds);
  if (proposed == 0) {
    steps_since_plain_ = 0;
    return;
  }
  ++steps_since_plain_;
  kept_ = kept_ * kAcceptanceDecay + kept;
  trials_ = trials_ * kAcceptanceDecay + kept + (kept < proposed ? 1 : 0);
}

void DraftPolicy::record_shadow(bool kept) {
  kept_ = kept_ * kAcceptanceDecay + (kept ? 1 : 0);
  trials_ = trials_ * kAcceptanceDecay + 1;
}

}  // namespace gufo::engine
