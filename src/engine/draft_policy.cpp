// DraftPolicy (see draft_policy.h).
#include "engine/draft_policy.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace gufo::engine {
namespace {

// Each draft token tried (kept or refused) weighs the acceptance seen before it by this much:
// the estimate follows the text as it changes (a quoted block, then free prose) within a few
// dozen tokens, and is not swayed by a lucky run of a few.
constexpr double kAcceptanceDecay = 0.95;
// Drafting must promise this many times plain decoding's tokens per second to be chosen.
constexpr double kDraftingMargin = 1.03;
// Plain steps timed (after the first, which runs cold) before any drafting: the lower of two
// leaves out one slowed by the machine, which would make drafts look cheap until the next
// timing, kRetimePlainAfter drafting steps later.
constexpr int kPlainTimings = 2;
// A plain step is timed again after this many drafting steps (a step's cost grows with the
// context).
constexpr int32_t kRetimePlainAfter = 32;
// ... and after this many while fewer than a window of plain timings are kept: the first steps
// after a prompt run slower (caches, a CPU's clocks; on 2 cores up to twice as slow), so the
// first plain timings are soon replaced by ones of the steady state.
constexpr int32_t kRetimePlainSoonAfter = 8;
// After this many plain steps in a row chosen because drafts did not pay, the drafting
// timings are forgotten where acceptance is at least kRetryAcceptance (a slow step may have
// made them look dear, or the machine has changed): the next step drafts and times again.
// Its cost is bounded by one drafted row in kRetryAfter steps.
constexpr int32_t kRetryAfter = 64;
constexpr double kRetryAcceptance = 0.5;

}  // namespace

void DraftPolicy::RecentTimings::add(double seconds) {
  if (!warm_) {
    warm_ = true;
    return;
  }
  seconds_[static_cast<size_t>(next_)] = seconds;
  next_ = (next_ + 1) % static_cast<int>(seconds_.size());
  count_ = std::min(count_ + 1, static_cast<int>(seconds_.size()));
}

double DraftPolicy::RecentTimings::lowest() const {
  return *std::min_element(seconds_.begin(), seconds_.begin() + count_);
}

double DraftPolicy::RecentTimings::lower_median() const {
  std::array<double, std::tuple_size_v<decltype(seconds_)>> sorted = seconds_;
  std::fill(sorted.begin() + count_, sorted.end(), std::numeric_limits<double>::infinity());
  std::sort(sorted.begin(), sorted.end());
  return sorted[static_cast<size_t>((count_ - 1) / 2)];
}

DraftPolicy::DraftPolicy(int32_t draft_min, int32_t draft_max, bool retry)
    : draft_min_(draft_min), draft_max_(draft_max), steps_(static_cast<size_t>(draft_max) + 1), retry_(retry) {}

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

bool DraftPolicy::drafting_timed() const {
  return std::any_of(steps_.begin() + 1, steps_.end(), [](const RecentTimings& t) { return !t.empty(); });
}

bool DraftPolicy::costs_known() const { return !steps_[0].empty() && drafting_timed(); }

// A plain step costs the least it cost lately: its timings are few (one in kRetimePlainAfter
// steps while drafting) and a noisy one would make drafts look cheap, where drafting's own
// timings are many and recent; so a close call goes to plain decoding.
double DraftPolicy::plain_seconds() const { return steps_[0].lowest(); }

// A length timed lately costs what it cost. One not timed: a plain step plus its rows at the
// cheapest row seen (rows get cheaper as a batch widens, so this hopeful guess lets a longer
// draft be tried; once tried, its own timings decide), but never below a drafter's token; with
// no plain step timed (draft_min > 0), the shortest timed length's cost a row, for every row
// (no guess that a row gets cheaper).
double DraftPolicy::step_seconds(int32_t length) const {
  const RecentTimings& timed = steps_[static_cast<size_t>(length)];
  if (length == 0 && !timed.empty()) return std::max(plain_seconds(), 1e-12);
  if (!timed.empty()) return std::max(timed.lower_median(), 1e-12);
  const bool plain_timed = !steps_[0].empty();
  const double plain = plain_timed ? plain_seconds() : 0.0;
  double cheapest_row = std::numeric_limits<double>::infinity();
  for (int32_t other = 1; other <= draft_max_; ++other) {
    const RecentTimings& t = steps_[static_cast<size_t>(other)];
    if (t.empty()) continue;
    const double row = plain_timed ? std::max(0.0, (t.lower_median() - plain) / other) : t.lower_median() / (other + 1);
    cheapest_row = std::min(cheapest_row, row);
    if (!plain_timed) break;  // the shortest timed length
  }
  // A draft model's token is made one at a time, however wide the batch that checks it.
  if (!proposal_token_.empty()) cheapest_row = std::max(cheapest_row, proposal_token_.lower_median());
  return std::max(plain_timed ? plain + cheapest_row * length : cheapest_row * (length + 1), 1e-12);
}

int32_t DraftPolicy::best_length() const {
  int32_t best = draft_min_;
  double best_rate = 0.0;
  for (int32_t length = draft_min_; length <= draft_max_; ++length) {
    const double rate = expected_tokens(length) / step_seconds(length);
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
  // Plain steps first, to time them (never a loss), then the shortest draft: a request that
  // ends early has paid little for what the policy learnt.
  const int32_t retime_after = steps_[0].full() ? kRetimePlainAfter : kRetimePlainSoonAfter;
  if (may_go_plain && (steps_[0].count() < kPlainTimings || steps_since_plain_ >= retime_after)) return 0;
  if (!drafting_timed()) return std::max(draft_min_, 1);
  const int32_t length = best_length();
  if (length > 0) {
    plain_run_ = 0;
    return length;
  }
  if (retry_ && ++plain_run_ >= kRetryAfter && acceptance() >= kRetryAcceptance) {
    plain_run_ = 0;
    for (size_t i = 1; i < steps_.size(); ++i) steps_[i].clear();
  }
  return 0;
}

void DraftPolicy::add_trials(int32_t kept, bool refused) {
  for (int32_t i = 0; i < kept; ++i) {
    kept_ = kept_ * kAcceptanceDecay + 1.0;
    trials_ = trials_ * kAcceptanceDecay + 1.0;
  }
  if (refused) {
    kept_ *= kAcceptanceDecay;
    trials_ = trials_ * kAcceptanceDecay + 1.0;
  }
}

void DraftPolicy::record(int32_t proposed, int32_t kept, double seconds) {
  if (proposed < 0 || proposed > draft_max_) return;
  steps_[static_cast<size_t>(proposed)].add(seconds);
  if (proposed == 0) {
    steps_since_plain_ = 0;
    return;
  }
  ++steps_since_plain_;
  add_trials(kept, kept < proposed);
}

void DraftPolicy::record_untimed(int32_t proposed, int32_t kept) {
  if (proposed <= 0 || proposed > draft_max_) return;
  ++steps_since_plain_;
  add_trials(kept, kept < proposed);
}

void DraftPolicy::record_shadow(bool kept) { add_trials(kept ? 1 : 0, !kept); }

void DraftPolicy::record_proposal(int32_t length, double seconds) {
  if (length > 0) proposal_token_.add(seconds / length);
}

}  // namespace gufo::engine
