// How many drafted tokens to verify next (speculative decoding, engine/generate.cpp): the
// length that makes the most tokens per second, from what steps of each length have cost and
// how much of the drafts was kept. Drafting is only worth it where a step of 1 + L rows costs
// less than the tokens it is expected to yield would cost one at a time: where decode is bound
// by reading the weights (a model larger than the caches; a GPU), which a wider batch reads
// once, but not for a small model on a few CPU cores, where a row can cost nearly as much as a
// step. So the policy times steps of each length (a plain step first, then the shortest
// draft, so a short request pays little for what it learns) and decodes plainly where drafts
// do not pay, retrying now and then; meanwhile it keeps estimating acceptance
// from "shadow" drafts (what the drafter would have proposed, against the token then sampled),
// so it drafts again as soon as the text turns repetitive.
// Tested by tests/unit/engine/speculative_test.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace gufo::engine {

class DraftPolicy {
 public:
  // Lengths from draft_min (0: plain decoding allowed) to draft_max (>= 1, >= draft_min).
  // retry: after a long plain run with drafts that would be kept, forget the drafting timings
  // and time them again (prompt lookup, whose drafts cost nothing to make); without, the
  // timings stand (a draft model, whose tokens cost the same whatever the text).
  DraftPolicy(int32_t draft_min, int32_t draft_max, bool retry = true);

  // The most tokens to propose next (the lookup may find fewer); 0: decode one token plainly.
  int32_t next_length();

  // After a step of 1 + `proposed` rows that took `seconds` (its evaluation and the sampling of
  // the rows it gave), of whose drafts the first `kept` were kept.
  void record(int32_t proposed, int32_t kept, double seconds);
  // The same for a step whose time says nothing of what its drafts cost (it ran beside other
  // work): only what was kept counts.
  void record_untimed(int32_t proposed, int32_t kept);
  // After a plain step whose lookup would have proposed a token: whether it was the one sampled.
  void record_shadow(bool kept);
  // The time the drafter took to propose `length` tokens (a draft model's own decoding, its
  // catching up on tokens it had not seen included; a lookup's microseconds): what a drafted
  // row costs at least, whatever a batch's timings suggest.
  void record_proposal(int32_t length, double seconds);

  // The estimates the choice is made from (for tests and diagnostics).
  double acceptance() const;                     // chance that a draft token is kept, once the ones before it were
  double expected_tokens(int32_t length) const;  // tokens a step with `length` drafts yields
  bool costs_known() const;                      // a plain and a drafting step have been timed

 private:
  // The latest few timings of steps of one length. The first step of a length runs cold
  // (caches, buffers sized for its rows, on a GPU the capture of its graph) and a step now and
  // then is slowed by the machine, so the first is not kept and a length costs the lower median
  // of the latest ones.
  class RecentTimings {
   public:
    void add(double seconds);
    bool empty() const { return count_ == 0; }
    int count() const { return count_; }
    bool full() const { return count_ == static_cast<int>(seconds_.size()); }
    double lowest() const;
    double lower_median() const;
    void clear() { count_ = next_ = 0; }

   private:
    std::array<double, 5> seconds_{};
    int count_ = 0;
    int next_ = 0;
    bool warm_ = false;  // the first timing has been seen (and left out)
  };

  double plain_seconds() const;               // needs a timed plain step
  double step_seconds(int32_t length) const;  // estimated, > 0; needs a timed drafting length
  int32_t best_length() const;
  bool drafting_timed() const;
  void add_trials(int32_t kept, bool refused);

  int32_t draft_min_;
  int32_t draft_max_;
  double kept_ = 1.0;                 // decayed counts of kept draft tokens and of trials (kept + refusals),
  double trials_ = 2.0;               // starting from a prior of one in two
  std::vector<RecentTimings> steps_;  // [proposed rows]: 0 plain, up to draft_max_
  RecentTimings proposal_token_;      // the drafter's seconds a proposed token
  int32_t steps_since_plain_ = 0;     // drafting steps since a plain step was last timed
  int32_t plain_run_ = 0;             // plain steps chosen in a row because drafts did not pay
  bool retry_ = true;
};

}  // namespace gufo::engine
