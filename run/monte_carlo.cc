#include "run/monte_carlo.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <utility>

#include "sim/parallel.h"
#include "sim/stats.h"

namespace trainsim::run {

// A trial allocates and frees the same few hundred KB (failure records, retained checkpoints,
// the event queue). glibc returns a free heap top above M_TRIM_THRESHOLD (128 KiB by default) to
// the kernel at once, so every trial paid a brk() and a TLB shootdown for it: half of a 30-day
// 16k-GPU trial's CPU (bench/README.md, run: 1.1 s → 0.54 s per 1,000 trials). Keeping up to
// 64 MiB of freed heap (far above one trial's, far below any machine's memory) removes that.
// Process-wide and once; other allocators (and sanitizers) ignore or lack mallopt.
void KeepFreedHeapForTrials() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    constexpr int kKeepBytes = 64 << 20;
    mallopt(M_TRIM_THRESHOLD, kKeepBytes);
    mallopt(M_TOP_PAD, kKeepBytes);
  });
#endif
}

Result<std::vector<TrialOutcome>> RunTrials(const RunConfig& config, StepTimeCache& step_times,
                                            int64_t begin, int64_t end, int threads) {
  if (begin < 0 || end < begin) {
    return Status::InvalidArgument("trials: need 0 <= begin <= end, got [" + std::to_string(begin) +
                                   ", " + std::to_string(end) + ")");
  }
  TRAINSIM_RETURN_IF_ERROR(ValidateRunConfig(config));
  TRAINSIM_RETURN_IF_ERROR(detail::CheckFaultsBeforeEnd(config, step_times));
  RunConfig quiet = config;
  quiet.record_events = false;
  KeepFreedHeapForTrials();
  // Each index writes only its own slot, and trial k's randomness is its own stream, so the
  // outcomes do not depend on which thread ran which trial (sim/parallel.h).
  std::vector<TrialOutcome> out(static_cast<size_t>(end - begin));
  Status st = sim::ParallelFor(end - begin, std::max(1, threads), [&](int64_t i) -> Status {
    const int64_t k = begin + i;
    Result<RunReport> r = detail::SimulateRunUnchecked(quiet, step_times, k, true);
    if (!r.ok()) return r.status().WithPrefix("trial " + std::to_string(k));
    TrialOutcome& o = out[static_cast<size_t>(i)];
    o.trial = k;
    o.wall_time_s = r->wall_time.seconds();
    o.useful_compute_fraction = r->useful_compute_fraction;
    o.ettr = r->ettr;
    o.cost_usd = r->cost_usd;
    o.lost_work_s = r->breakdown.lost.seconds();
    o.failures = r->failures;
    o.checkpoints = r->checkpoints;
    o.steps = r->total_steps;
    o.breakdown = r->breakdown;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Stat StatOf(std::vector<double> samples) {
  Stat s;
  Result<sim::Summary> sum = sim::Summarize(std::move(samples));
  if (!sum.ok()) return s;
  s.mean = sum->mean;
  s.p50 = sum->p50;
  s.p90 = sum->p90;
  s.p99 = sum->p99;
  s.p10 = sum->p10;
  s.p1 = sum->p1;
  return s;
}

namespace {

template <typename F>
Stat StatOfOutcomes(const std::vector<TrialOutcome>& v, F get) {
  std::vector<double> x;
  x.reserve(v.size());
  for (const TrialOutcome& o : v) x.push_back(get(o));
  return StatOf(std::move(x));
}

}  // namespace

MonteCarloSummary Summarize(std::vector<TrialOutcome> outcomes) {
  std::sort(outcomes.begin(), outcomes.end(),
            [](const TrialOutcome& a, const TrialOutcome& b) { return a.trial < b.trial; });
  MonteCarloSummary s;
  s.trials = static_cast<int64_t>(outcomes.size());
  s.wall_time_s = StatOfOutcomes(outcomes, [](const TrialOutcome& o) { return o.wall_time_s; });
  s.useful_compute_fraction =
      StatOfOutcomes(outcomes, [](const TrialOutcome& o) { return o.useful_compute_fraction; });
  s.ettr = StatOfOutcomes(outcomes, [](const TrialOutcome& o) { return o.ettr; });
  s.cost_usd = StatOfOutcomes(outcomes, [](const TrialOutcome& o) { return o.cost_usd; });
  s.lost_work_s = StatOfOutcomes(outcomes, [](const TrialOutcome& o) { return o.lost_work_s; });
  s.failures = StatOfOutcomes(outcomes, [](const TrialOutcome& o) { return double(o.failures); });
  return s;
}

Result<IntervalOptimum> OptimizeCheckpointInterval(const RunConfig& config,
                                                   StepTimeCache& step_times, int64_t trials,
                                                   std::vector<double> grid_s, int threads) {
  if (trials <= 0) return Status::InvalidArgument("trials must be positive");
  TRAINSIM_RETURN_IF_ERROR(ValidateRunConfig(config));
  IntervalOptimum opt;
  opt.mtbf_s = ClusterMtbfSeconds(config);
  if (!std::isfinite(opt.mtbf_s)) {
    return Status::FailedPrecondition(
        "optimising the checkpoint interval needs the stochastic failure model "
        "(failures.enabled with node_day_rate > 0)");
  }
  Result<double> delta = CheckpointBlockingCostSeconds(config, step_times);
  if (!delta.ok()) return delta.status();
  opt.delta_s = delta.value();
  opt.young_s = checkpoint::YoungIntervalSeconds(opt.delta_s, opt.mtbf_s);
  opt.daly_s = checkpoint::DalyIntervalSeconds(opt.delta_s, opt.mtbf_s);
  Result<checkpoint::CheckpointCosts> costs =
      checkpoint::ComputeCheckpointCosts(config.checkpoint.spec, CheckpointHardwareOf(config));
  if (!costs.ok()) return costs.status();
  opt.background_write_s = BackgroundWriteBound(config, costs.value()).seconds();
  if (grid_s.empty()) {
    // Daly/4 .. Daly·4, geometric, starting no lower than the background write (a shorter
    // interval cannot be kept: the next checkpoint waits for the previous write) nor than one
    // healthy step (every shorter interval checkpoints after every step: the same run).
    RunState healthy;
    healthy.live_dp_replicas = config.dp;
    Result<StepTiming> step = step_times.Get(healthy);
    if (!step.ok()) return step.status();
    const double step_s = step->total().seconds();
    constexpr int kPoints = 21;
    const double lo = std::max({opt.daly_s / 4.0, opt.background_write_s, step_s});
    const double hi = std::max(opt.daly_s * 4.0, 4.0 * lo);
    if (step_s > 0 && hi / step_s < kPoints) {
      // Fewer whole steps than grid points: every whole number of steps in [lo, hi] instead (a
      // finer grid repeats runs, as intervals between k - 1 and k steps checkpoint alike).
      for (double k = std::ceil(lo / step_s); k * step_s <= hi; k += 1)
        grid_s.push_back(k * step_s);
    } else {
      for (int i = 0; i < kPoints; ++i) {
        grid_s.push_back(lo * std::pow(hi / lo, double(i) / (kPoints - 1)));
      }
    }
  }
  std::sort(grid_s.begin(), grid_s.end());
  for (double g : grid_s) {
    if (!(g > 0) || !std::isfinite(g)) {
      return Status::InvalidArgument("checkpoint interval grid points must be positive");
    }
    RunConfig c = config;
    c.checkpoint.interval.kind = checkpoint::CheckpointInterval::Kind::kTrainingTime;
    c.checkpoint.interval.every = sim::Time::FromSeconds(g);
    Result<std::vector<TrialOutcome>> r = RunTrials(c, step_times, 0, trials, threads);
    if (!r.ok()) return r.status();
    double wall = 0, useful_fraction = 0, steps = 0;
    for (const TrialOutcome& o : r.value()) {
      wall += o.wall_time_s;
      useful_fraction += o.useful_compute_fraction;
      steps += static_cast<double>(o.steps);
    }
    const double n = static_cast<double>(trials);
    IntervalScanPoint p;
    p.interval_s = g;
    p.mean_wall_time_s = wall / n;
    p.mean_useful_compute_fraction = useful_fraction / n;
    p.mean_steps = steps / n;
    if (!(steps > 0)) {
      return Status::FailedPrecondition(
          "no training step is kept at checkpoint interval " + sim::FormatSecondsHuman(g) +
          " in any trial; the training goal is too short to compare intervals");
    }
    p.wall_time_per_step_s = wall / steps;
    opt.scan.push_back(p);
  }
  size_t best = 0;
  for (size_t i = 1; i < opt.scan.size(); ++i) {
    if (opt.scan[i].wall_time_per_step_s < opt.scan[best].wall_time_per_step_s) best = i;
  }
  opt.best_grid_s = opt.scan[best].interval_s;
  opt.bound = best == 0 && opt.background_write_s > 0 &&
                      opt.scan[0].interval_s <= opt.background_write_s * (1 + 1e-9)
                  ? "BACKGROUND_WRITE"
                  : "FAILURE_RATE";
  opt.fitted_s = opt.best_grid_s;
  // Least-squares parabola y = a·x² + b·x + c in x = log(interval) over the best point and up to
  // two neighbours on each side; its vertex, kept within the fitted points, is the optimum.
  const size_t lo = best >= 2 ? best - 2 : 0;
  const size_t hi = std::min(opt.scan.size() - 1, best + 2);
  if (best > 0 && best + 1 < opt.scan.size() && hi - lo >= 2) {
    const double x_mid = std::log(opt.scan[best].interval_s);  // centre for conditioning
    double s[5] = {0, 0, 0, 0, 0}, t[3] = {0, 0, 0};           // Σx^k, Σx^k·y
    for (size_t i = lo; i <= hi; ++i) {
      const double x = std::log(opt.scan[i].interval_s) - x_mid;
      const double y = opt.scan[i].wall_time_per_step_s;
      double xk = 1;
      for (int k = 0; k < 5; ++k) {
        if (k < 3) t[k] += xk * y;
        s[k] += xk;
        xk *= x;
      }
    }
    // Normal equations [s4 s3 s2; s3 s2 s1; s2 s1 s0]·[a b c] = [t2 t1 t0], by Cramer's rule.
    auto det3 = [](double m00, double m01, double m02, double m10, double m11, double m12,
                   double m20, double m21, double m22) {
      return m00 * (m11 * m22 - m12 * m21) - m01 * (m10 * m22 - m12 * m20) +
             m02 * (m10 * m21 - m11 * m20);
    };
    const double d = det3(s[4], s[3], s[2], s[3], s[2], s[1], s[2], s[1], s[0]);
    if (d != 0) {
      const double a = det3(t[2], s[3], s[2], t[1], s[2], s[1], t[0], s[1], s[0]) / d;
      const double b = det3(s[4], t[2], s[2], s[3], t[1], s[1], s[2], t[0], s[0]) / d;
      if (a > 0) {
        const double x_lo = std::log(opt.scan[lo].interval_s) - x_mid;
        const double x_hi = std::log(opt.scan[hi].interval_s) - x_mid;
        opt.fitted_s = std::exp(x_mid + std::clamp(-b / (2 * a), x_lo, x_hi));
      }
    }
  }
  return opt;
}

}  // namespace trainsim::run
