// Noise-aware comparison of two sets of throughput samples (tokens/s): the difference of the
// means with a 95% Welch confidence interval, relative to the baseline's mean, and the words a
// report uses for it. Tested by tests/unit/qualify/stats_test.cpp.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace gufo::qualify {

struct Summary {
  double mean = 0;
  double stdev = 0;  // sample standard deviation (n - 1)
  size_t n = 0;
};

Summary summarize(const std::vector<double>& samples);

// The middle value (the mean of the two middle ones for an even count); 0 for none.
double median(std::vector<double> samples);

// 97.5% quantile of Student's t with `dof` degrees of freedom (two-sided 95%).
double student_t_975(double dof);

enum class Change { None, Faster, Slower };

struct Comparison {
  Summary baseline;
  Summary candidate;
  double relative = 0;      // candidate mean / baseline mean - 1
  double relative_low = 0;  // 95% interval of `relative`
  double relative_high = 0;
  Change change = Change::None;  // None when the interval holds 0

  // "no change (+0.8%, 95% CI -1.2% .. +2.7%)", "slower by 12.0% (95% CI -15.1% .. -8.8%)".
  std::string describe() const;
};

// Needs at least two samples on each side and a positive baseline mean.
Result<Comparison> compare_throughput(const std::vector<double>& baseline, const std::vector<double>& candidate);

}  // namespace gufo::qualify
