// run::RunTrials and friends — Monte Carlo over failure histories, and the checkpoint
// interval scan behind `trainsim run --optimize-checkpoint-interval`.
//
// Trial k draws its failures from RandomStreams(config.seed).Stream("trial/<k>/failures") and
// nothing else, so trial k's outcome depends only on (config, k): running trials [0, 1000) in one
// process and [0, 500) + [500, 1000) in two (an MPI sweep) gives the same outcomes, and
// Summarize() of the concatenation is identical (it orders by trial index before summing).
// Two configs that differ only in scheduled faults or in the checkpoint interval see the same
// failure history in trial k (common random numbers), so their difference is the change's alone.
//
// Statistics use sim/stats.h, the product's one percentile rule (linear interpolation between
// closest ranks, NumPy's and R's default): p50 of an even count is the midpoint of the two middle
// values, p99 of 100 samples lies between the 99th and the 100th smallest.
#ifndef TRAINSIM_RUN_MONTE_CARLO_H_
#define TRAINSIM_RUN_MONTE_CARLO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "run/run_simulation.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::run {

struct TrialOutcome {
  int64_t trial = 0;
  double wall_time_s = 0;
  double useful_compute_fraction = 0;
  double ettr = 0;
  double cost_usd = 0;
  double lost_work_s = 0;
  int failures = 0;
  int checkpoints = 0;
  int64_t steps = 0;  // steps kept (the goal, or what fit in a wall-clock goal)
  Breakdown breakdown;
};

// Runs trials [begin, end). REQUIRES nothing of the range beyond 0 <= begin <= end (checked).
// Validates the config once; events are not recorded. `threads` (≥ 1; sim::ResolveThreads turns
// --threads 0 into the core count) run trials side by side through sim::ParallelFor: outcome i
// is trial begin + i whatever the thread count, and an error is the lowest failing trial's, so
// the result is the one thread's, byte for byte.
Result<std::vector<TrialOutcome>> RunTrials(const RunConfig& config, StepTimeCache& step_times,
                                            int64_t begin, int64_t end, int threads = 1);

// Keeps up to 64 MiB of freed heap in the process (glibc's trim threshold and top pad), so that
// trials that allocate and free the same memory do not return it to the kernel and fault it in
// again each time. Process-wide, once; RunTrials and SimulateWhatIfTrials call it.
void KeepFreedHeapForTrials();

struct Stat {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  double p10 = 0, p1 = 0;  // the low tail: the worse one of ETTR and the useful compute
};

struct MonteCarloSummary {
  int64_t trials = 0;
  Stat wall_time_s, useful_compute_fraction, ettr, cost_usd, lost_work_s, failures;
};

// Summarises outcomes in trial order (the input may come in any order, e.g. gathered from ranks).
// Each Stat is sim::Summarize of that quantity over the trials (all zero when `outcomes` is
// empty).
MonteCarloSummary Summarize(std::vector<TrialOutcome> outcomes);
// sim::Summarize's mean, p1, p10, p50, p90 and p99 of `samples` (all zero for an empty or
// non-finite set).
Stat StatOf(std::vector<double> samples);

struct IntervalScanPoint {
  double interval_s = 0;
  double mean_wall_time_s = 0;
  double mean_useful_compute_fraction = 0;
  double mean_steps = 0;
  // The objective: wall time per step kept, Σ wall / Σ steps over the trials. For a goal in
  // steps it is the mean wall time / steps; for a wall-clock goal (training.duration) the wall
  // time is fixed and it falls as more steps fit, so one objective serves both goals.
  double wall_time_per_step_s = 0;
};

struct IntervalOptimum {
  std::vector<IntervalScanPoint> scan;
  double best_grid_s = 0;  // the grid point with the smallest wall_time_per_step_s
  // The vertex of a least-squares parabola in log(interval) over the best grid point and up to
  // two neighbours each side (the grid point itself when it lies on the grid's edge): smooths
  // Monte Carlo noise.
  double fitted_s = 0;
  double young_s = 0;
  double daly_s = 0;
  double delta_s = 0;  // blocking cost of one checkpoint used by Young and Daly
  double mtbf_s = 0;   // 1 / cluster failure rate
  // The shortest interval the storage allows (BackgroundWriteBound); the default grid starts
  // there when Daly/4 is shorter.
  double background_write_s = 0;
  // What bounds the optimum: "BACKGROUND_WRITE" when the best grid point is the bound itself,
  // else "FAILURE_RATE" (the trade-off between checkpoint cost and lost work).
  std::string bound = "FAILURE_RATE";
};

// Scans training-time checkpoint intervals (`grid_s`; empty = 21 points from
// max(Daly/4, background write, one healthy step) to Daly·4 (at least 4× the start), geometric,
// or every whole number of steps between them where that is fewer) with `trials` trials
// each (common random numbers across grid points), minimising the wall time per step kept, and
// reports the optimum next to Young's and Daly's. Requires the stochastic failure model to be on;
// FailedPrecondition when no trial keeps a step. `threads` as for RunTrials (same result).
Result<IntervalOptimum> OptimizeCheckpointInterval(const RunConfig& config,
                                                   StepTimeCache& step_times, int64_t trials,
                                                   std::vector<double> grid_s = {},
                                                   int threads = 1);

}  // namespace trainsim::run

#endif  // TRAINSIM_RUN_MONTE_CARLO_H_
