// The run simulation's Monte Carlo at scale: 1000 trials of a 30-day run of 16,384 GPUs (2,048
// nodes of 8; TP 8, PP 16, DP 128, a Llama-3-405B-like layout) under the default failure model
// (Llama 3's mix at 3.79e-3 failures per node-day: ~240 failures per trial), synchronous hourly
// checkpoints of a 405B model, restart on 32 hot spares. The step time comes from a fixed
// callback (10 s: 7 useful + 1 exposed comm + 2 bubble), so this measures the run simulation,
// not the step simulation (which is memoised per cluster state and benchmarked in step_bench).
//
// Performance target (bench/README.md, section `run`): 1000 trials in under 5 s on one core.
// BM_MonteCarlo30Days16kGpusThreads/10000/0/<threads>: issue 20's case, 10,000 SYNC trials on
// <threads> threads (0 = all cores), timed in wall time (target ≤ 2 s on the 2-core VM).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "run/monte_carlo.h"
#include "run/run_simulation.h"
#include "sim/parallel.h"

namespace trainsim::run {

using checkpoint::CheckpointInterval;
using checkpoint::CheckpointPolicy;
using checkpoint::DetectionMechanism;
using checkpoint::RecoveryPolicy;

namespace {

RunConfig ThirtyDayConfig(CheckpointPolicy policy, DetectionMechanism detection) {
  RunConfig c;
  c.nodes = 2048;
  c.gpus_per_node = 8;
  c.tp = 8;
  c.pp = 16;
  c.dp = 128;
  c.spare_nodes = 32;
  c.total_steps = 30LL * 86400 / 10;  // 30 days of fault-free training at 10 s per step
  c.checkpoint.policy = policy;
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kTrainingTime;
  c.checkpoint.interval.every = sim::Time::Hours(1);
  c.checkpoint.spec.parameters = 405'000'000'000;
  c.recovery.detection = detection;
  c.record_events = false;
  return c;
}

Result<StepTiming> FixedStep(const RunState& s) {
  // Background checkpoint traffic and missing replicas stretch the step a little.
  return StepTiming{sim::Time::Seconds(7),
                    sim::Time::FromSeconds(1.0 + 0.5 * s.checkpoint_traffic_share),
                    sim::Time::Seconds(2)};
}

void BM_MonteCarlo30Days16kGpus(benchmark::State& state) {
  const int64_t trials = state.range(0);
  const auto policy = static_cast<CheckpointPolicy>(state.range(1));
  const int threads = state.range(2) > 0 ? int(state.range(2)) : sim::ResolveThreads(0).value();
  RunConfig c = ThirtyDayConfig(policy, DetectionMechanism::kCollectiveTimeout);
  double failures = 0, useful_fraction = 0;
  for (auto _ : state) {
    StepTimeCache cache(FixedStep);
    Result<std::vector<TrialOutcome>> r = RunTrials(c, cache, 0, trials, threads);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    MonteCarloSummary s = Summarize(r.value());
    failures = s.failures.mean;
    useful_fraction = s.useful_compute_fraction.mean;
    benchmark::DoNotOptimize(s);
  }
  state.counters["failures_per_trial"] = failures;
  state.counters["mean_useful_compute_fraction"] = useful_fraction;
  state.SetItemsProcessed(state.iterations() * trials);
}
BENCHMARK(BM_MonteCarlo30Days16kGpus)
    ->Args({1000, static_cast<int>(CheckpointPolicy::kSync), 1})
    ->Args({1000, static_cast<int>(CheckpointPolicy::kAsync), 1})
    ->Args({1000, static_cast<int>(CheckpointPolicy::kInMemory), 1})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
// The same on every core, in wall time (CPU time counts the calling thread only).
BENCHMARK(BM_MonteCarlo30Days16kGpus)
    ->Name("BM_MonteCarlo30Days16kGpusThreads")
    ->Args({10000, static_cast<int>(CheckpointPolicy::kSync), 0})
    ->Args({10000, static_cast<int>(CheckpointPolicy::kSync), 1})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

// One fault-free 90-day run versus a 1-hour one: blocks of iterations make them cost the same.
void BM_FaultFreeRun(benchmark::State& state) {
  RunConfig c = ThirtyDayConfig(CheckpointPolicy::kSync, DetectionMechanism::kHeartbeat);
  c.failures.enabled = false;
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kNever;
  c.total_steps = state.range(0) / 10;
  StepTimeCache cache(FixedStep);
  for (auto _ : state) {
    Result<RunReport> r = SimulateRun(c, cache);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_FaultFreeRun)->Arg(3600)->Arg(90 * 86400)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace trainsim::run

BENCHMARK_MAIN();
