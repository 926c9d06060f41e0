#include "qualify/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace gufo::qualify {

Summary summarize(const std::vector<double>& samples) {
  Summary s;
  s.n = samples.size();
  if (s.n == 0) return s;
  double sum = 0;
  for (double x : samples) sum += x;
  s.mean = sum / static_cast<double>(s.n);
  if (s.n < 2) return s;
  double squares = 0;
  for (double x : samples) squares += (x - s.mean) * (x - s.mean);
  s.stdev = std::sqrt(squares / static_cast<double>(s.n - 1));
  return s;
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

double student_t_975(double dof) {
  // NOTE(stats): the table of any statistics text; between rows the smaller degree of
  // freedom's (larger) quantile is used, which widens the interval a little, never narrows it.
  static constexpr std::array<double, 30> kSmall = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
      2.120,  2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (!(dof >= 1)) return kSmall[0];
  if (dof < 31) return kSmall[static_cast<size_t>(std::floor(dof)) - 1];
  if (dof < 40) return 2.042;
  if (dof < 60) return 2.021;
  if (dof < 120) return 2.000;
  return dof < 1e6 ? 1.980 : 1.960;
}

std::string Comparison::describe() const {
  char text[160];
  const char* words = change == Change::Faster ? "faster by" : change == Change::Slower ? "slower by" : "no change";
  if (change == Change::None) {
    std::snprintf(text, sizeof text, "no change (%+.1f%%, 95%% CI %+.1f%% .. %+.1f%%)", 100 * relative,
                  100 * relative_low, 100 * relative_high);
  } else {
    std::snprintf(text, sizeof text, "%s %.1f%% (95%% CI %+.1f%% .. %+.1f%%)", words, 100 * std::fabs(relative),
                  100 * relative_low, 100 * relative_high);
  }
  return text;
}

Result<Comparison> compare_throughput(const std::vector<double>& baseline, const std::vector<double>& candidate) {
  if (baseline.size() < 2 || candidate.size() < 2) {
    return Error{"compare_throughput: needs at least two samples a side (have " + std::to_string(baseline.size()) +
                 " and " + std::to_string(candidate.size()) + ")"};
  }
  Comparison c;
  c.baseline = summarize(baseline);
  c.candidate = summarize(candidate);
  if (!(c.baseline.mean > 0)) return Error{"compare_throughput: the baseline's mean is not positive"};
  // Welch: unequal variances; Welch-Satterthwaite degrees of freedom.
  const double vb = c.baseline.stdev * c.baseline.stdev / static_cast<double>(c.baseline.n);
  const double vc = c.candidate.stdev * c.candidate.stdev / static_cast<double>(c.candidate.n);
  const double se = std::sqrt(vb + vc);
  double dof = 1e9;
  if (se > 0) {
    dof = (vb + vc) * (vb + vc) /
          (vb * vb / static_cast<double>(c.baseline.n - 1) + vc * vc / static_cast<double>(c.candidate.n - 1));
  }
  const double diff = c.candidate.mean - c.baseline.mean;
  const double half = student_t_975(dof) * se;
  c.relative = diff / c.baseline.mean;
  c.relative_low = (diff - half) / c.baseline.mean;
  c.relative_high = (diff + half) / c.baseline.mean;
  if (c.relative_low > 0) c.change = Change::Faster;
  if (c.relative_high < 0) c.change = Change::Slower;
  return c;
}

}  // namespace gufo::qualify
