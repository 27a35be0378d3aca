#include "sim/stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

namespace trainsim::sim {

double PercentileOfSorted(const std::vector<double>& sorted, double p) {
  assert(!sorted.empty());
  if (sorted.empty()) return 0;
  p = std::clamp(p, 0.0, 1.0);
  const double h = static_cast<double>(sorted.size() - 1) * p;
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  const double frac = h - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

Result<Summary> Summarize(std::vector<double> samples) {
  if (samples.empty()) return Status::InvalidArgument("cannot summarise an empty set of samples");
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      return Status::InvalidArgument("sample " + std::to_string(i) + " of " +
                                     std::to_string(samples.size()) +
                                     " is not a finite number; statistics need finite samples");
    }
  }
  std::sort(samples.begin(), samples.end());
  Summary s;
  s.count = samples.size();
  const double n = static_cast<double>(s.count);
  double sum = 0;
  for (double x : samples) sum += x;
  s.mean = sum / n;
  if (s.count > 1) {
    // Two-pass variance: stable where the naive sum-of-squares formula cancels catastrophically.
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / (n - 1));
  }
  // 1.96: the two-sided 95% quantile of the standard normal.
  s.ci95_half_width = 1.96 * s.stddev / std::sqrt(n);
  s.min = samples.front();
  s.max = samples.back();
  s.p50 = PercentileOfSorted(samples, 0.50);
  s.p90 = PercentileOfSorted(samples, 0.90);
  s.p99 = PercentileOfSorted(samples, 0.99);
  s.p1 = PercentileOfSorted(samples, 0.01);
  s.p10 = PercentileOfSorted(samples, 0.10);
  return s;
}

}  // namespace trainsim::sim
