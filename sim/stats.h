// sim::Summarize — summary statistics of Monte Carlo samples (e.g. ETTR over N trials).
//
// Percentile rule: linear interpolation between closest ranks, the "type 7" estimator of
// Hyndman & Fan (1996) and the default of NumPy's percentile and R's quantile: for sorted
// samples x[0..n-1] and p in [0, 1], h = (n - 1) p and
//   P(p) = x[floor(h)] + (h - floor(h)) (x[floor(h) + 1] - x[floor(h)]).
// So P(0) is the minimum, P(1) the maximum, and the p50 of an even count is the midpoint of the
// two middle values.
//
// Promises: results do not depend on the order of the samples (the mean is summed over the
// sorted samples), so Monte Carlo trials gathered in any order (threads, MPI ranks) summarise
// to identical bytes. Non-finite samples and an empty set are errors, not NaN results.
#ifndef TRAINSIM_SIM_STATS_H_
#define TRAINSIM_SIM_STATS_H_

#include <cstddef>
#include <vector>

#include "sim/status.h"

namespace trainsim::sim {

struct Summary {
  size_t count = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1 denominator); 0 when count == 1
  // Half-width of the normal-approximation 95% confidence interval of the mean:
  // 1.96 * stddev / sqrt(count).
  double ci95_half_width = 0;
  double min = 0;
  double p1 = 0;
  double p10 = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

// Summarises `samples`. Errors: kInvalidArgument when empty or when a sample is NaN or infinite.
Result<Summary> Summarize(std::vector<double> samples);

// The type-7 percentile of ascending-sorted samples. REQUIRES: !sorted.empty(), sorted
// ascending, 0 <= p <= 1 (p is clamped to [0, 1]).
double PercentileOfSorted(const std::vector<double>& sorted, double p);

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_STATS_H_
