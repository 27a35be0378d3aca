// checkpoint::RunTrials and friends — Monte Carlo over failure histories, and the checkpoint
// interval scan behind `trainsim run --optimize-checkpoint-interval`.
//
// Trial k draws its failures from RandomStreams(config.seed).Stream("trial/<k>/failures") and
// nothing else, so trial k's outcome depends only on (config, k): running trials [0, 1000) in one
// process and [0, 500) + [500, 1000) in two (an MPI sweep) gives the same outcomes, and
// Summarize() of the concatenation is identical (it orders by trial index before summing).
// Two configs that differ only in scheduled faults or in the checkpoint interval see the same
// failure history in trial k (common random numbers), so their difference is the change's alone.
//
// Percentiles use the nearest-rank method on the sorted values (p-th percentile = the
// ceil(p/100 · n)-th smallest), which is exact and deterministic.
#ifndef TRAINSIM_CHECKPOINT_MONTE_CARLO_H_
#define TRAINSIM_CHECKPOINT_MONTE_CARLO_H_

#include <cstdint>
#include <vector>

#include "checkpoint/run_simulation.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::checkpoint {

struct TrialOutcome {
  int64_t trial = 0;
  double wall_time_s = 0;
  double goodput = 0;
  double ettr = 0;
  double cost_usd = 0;
  double lost_work_s = 0;
  int failures = 0;
  int checkpoints = 0;
  Breakdown breakdown;
};

// Runs trials [begin, end). REQUIRES nothing of the range beyond 0 <= begin <= end (checked).
// Validates the config once; events are not recorded.
Result<std::vector<TrialOutcome>> RunTrials(const RunConfig& config, StepTimeCache& step_times,
                                            int64_t begin, int64_t end);

struct Stat {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

struct MonteCarloSummary {
  int64_t trials = 0;
  Stat wall_time_s, goodput, ettr, cost_usd, lost_work_s, failures;
};

// Summarises outcomes in trial order (the input may come in any order, e.g. gathered from ranks).
MonteCarloSummary Summarize(std::vector<TrialOutcome> outcomes);
// Nearest-rank percentile of `sorted` (ascending). REQUIRES: !sorted.empty(), 0 < p <= 100.
double NearestRankPercentile(const std::vector<double>& sorted, double p);

struct IntervalScanPoint {
  double interval_s = 0;
  double mean_wall_time_s = 0;
};

struct IntervalOptimum {
  std::vector<IntervalScanPoint> scan;
  double best_grid_s = 0;  // the grid point with the smallest mean wall time
  // The vertex of a least-squares parabola in log(interval) over the best grid point and up to
  // two neighbours each side (the grid point itself when it lies on the grid's edge): smooths
  // Monte Carlo noise.
  double fitted_s = 0;
  double young_s = 0;
  double daly_s = 0;
  double delta_s = 0;  // blocking cost of one checkpoint used by Young and Daly
  double mtbf_s = 0;   // 1 / cluster failure rate
};

// Scans training-time checkpoint intervals (`grid_s`; empty = 21 points from Daly/4 to Daly·4,
// geometric) with `trials` trials each (common random numbers across grid points) and reports
// the optimum next to Young's and Daly's. Requires the stochastic failure model to be on.
Result<IntervalOptimum> OptimizeCheckpointInterval(const RunConfig& config,
                                                   StepTimeCache& step_times, int64_t trials,
                                                   std::vector<double> grid_s = {});

}  // namespace trainsim::checkpoint

#endif  // TRAINSIM_CHECKPOINT_MONTE_CARLO_H_
