#include "checkpoint/monte_carlo.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace trainsim::checkpoint {

Result<std::vector<TrialOutcome>> RunTrials(const RunConfig& config, StepTimeCache& step_times,
                                            int64_t begin, int64_t end) {
  if (begin < 0 || end < begin) {
    return Status::InvalidArgument("trials: need 0 <= begin <= end, got [" + std::to_string(begin) +
                                   ", " + std::to_string(end) + ")");
  }
  TRAINSIM_RETURN_IF_ERROR(ValidateRunConfig(config));
  TRAINSIM_RETURN_IF_ERROR(detail::CheckFaultsBeforeEnd(config, step_times));
  RunConfig quiet = config;
  quiet.record_events = false;
  std::vector<TrialOutcome> out;
  out.reserve(static_cast<size_t>(end - begin));
  for (int64_t k = begin; k < end; ++k) {
    Result<RunReport> r = detail::SimulateRunUnchecked(quiet, step_times, k, true);
    if (!r.ok()) return r.status().WithPrefix("trial " + std::to_string(k));
    TrialOutcome o;
    o.trial = k;
    o.wall_time_s = r->wall_time.seconds();
    o.goodput = r->goodput;
    o.ettr = r->ettr;
    o.cost_usd = r->cost_usd;
    o.lost_work_s = r->breakdown.lost.seconds();
    o.failures = r->failures;
    o.checkpoints = r->checkpoints;
    o.breakdown = r->breakdown;
    out.push_back(o);
  }
  return out;
}

double NearestRankPercentile(const std::vector<double>& sorted, double p) {
  const double n = static_cast<double>(sorted.size());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * n));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

namespace {

template <typename F>
Stat StatOf(const std::vector<TrialOutcome>& v, F get) {
  Stat s;
  if (v.empty()) return s;
  std::vector<double> x;
  x.reserve(v.size());
  double sum = 0;
  for (const TrialOutcome& o : v) {
    x.push_back(get(o));
    sum += x.back();
  }
  s.mean = sum / static_cast<double>(x.size());
  std::sort(x.begin(), x.end());
  s.p50 = NearestRankPercentile(x, 50);
  s.p90 = NearestRankPercentile(x, 90);
  s.p99 = NearestRankPercentile(x, 99);
  return s;
}

}  // namespace

MonteCarloSummary Summarize(std::vector<TrialOutcome> outcomes) {
  std::sort(outcomes.begin(), outcomes.end(),
            [](const TrialOutcome& a, const TrialOutcome& b) { return a.trial < b.trial; });
  MonteCarloSummary s;
  s.trials = static_cast<int64_t>(outcomes.size());
  s.wall_time_s = StatOf(outcomes, [](const TrialOutcome& o) { return o.wall_time_s; });
  s.goodput = StatOf(outcomes, [](const TrialOutcome& o) { return o.goodput; });
  s.ettr = StatOf(outcomes, [](const TrialOutcome& o) { return o.ettr; });
  s.cost_usd = StatOf(outcomes, [](const TrialOutcome& o) { return o.cost_usd; });
  s.lost_work_s = StatOf(outcomes, [](const TrialOutcome& o) { return o.lost_work_s; });
  s.failures = StatOf(outcomes, [](const TrialOutcome& o) { return double(o.failures); });
  return s;
}

Result<IntervalOptimum> OptimizeCheckpointInterval(const RunConfig& config,
                                                   StepTimeCache& step_times, int64_t trials,
                                                   std::vector<double> grid_s) {
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
  opt.young_s = YoungIntervalSeconds(opt.delta_s, opt.mtbf_s);
  opt.daly_s = DalyIntervalSeconds(opt.delta_s, opt.mtbf_s);
  if (grid_s.empty()) {
    constexpr int kPoints = 21;
    for (int i = 0; i < kPoints; ++i) {
      grid_s.push_back(opt.daly_s * std::pow(16.0, double(i) / (kPoints - 1)) / 4.0);
    }
  }
  std::sort(grid_s.begin(), grid_s.end());
  for (double g : grid_s) {
    if (!(g > 0) || !std::isfinite(g)) {
      return Status::InvalidArgument("checkpoint interval grid points must be positive");
    }
    RunConfig c = config;
    c.checkpoint.interval.kind = CheckpointInterval::Kind::kTrainingTime;
    c.checkpoint.interval.every = sim::Time::FromSeconds(g);
    Result<std::vector<TrialOutcome>> r = RunTrials(c, step_times, 0, trials);
    if (!r.ok()) return r.status();
    double sum = 0;
    for (const TrialOutcome& o : r.value()) sum += o.wall_time_s;
    opt.scan.push_back({g, sum / static_cast<double>(trials)});
  }
  size_t best = 0;
  for (size_t i = 1; i < opt.scan.size(); ++i) {
    if (opt.scan[i].mean_wall_time_s < opt.scan[best].mean_wall_time_s) best = i;
  }
  opt.best_grid_s = opt.scan[best].interval_s;
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
      const double y = opt.scan[i].mean_wall_time_s;
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

}  // namespace trainsim::checkpoint
