#include "run/monte_carlo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/run/run_test_util.h"

namespace trainsim::run {
namespace {

using checkpoint::CheckpointPolicy;
using checkpoint::FailureCause;

using sim::Time;

TEST(MonteCarloTest, SplittingTheTrialRangeGivesIdenticalResults) {
  RunConfig c = testing::DemoLikeConfig();
  c.failures.enabled = true;
  c.failures.node_day_rate = 0.1;
  StepTimeCache cache(testing::SimpleStep());
  Result<std::vector<TrialOutcome>> all = RunTrials(c, cache, 0, 10);
  Result<std::vector<TrialOutcome>> lo = RunTrials(c, cache, 0, 4);
  Result<std::vector<TrialOutcome>> hi = RunTrials(c, cache, 4, 10);
  ASSERT_TRUE(all.ok() && lo.ok() && hi.ok());
  std::vector<TrialOutcome> joined = hi.value();  // gathered out of order on purpose
  joined.insert(joined.end(), lo->begin(), lo->end());
  MonteCarloSummary a = Summarize(all.value()), b = Summarize(joined);
  EXPECT_EQ(a.wall_time_s.mean, b.wall_time_s.mean);
  EXPECT_EQ(a.useful_compute_fraction.p90, b.useful_compute_fraction.p90);
  EXPECT_EQ(a.cost_usd.p99, b.cost_usd.p99);
  EXPECT_EQ(a.trials, 10);
  // Different trials draw different histories.
  EXPECT_NE(all->at(0).wall_time_s, all->at(1).wall_time_s);
}

// One percentile rule for the product: sim/stats.h's linear interpolation (type 7). For the
// samples 1..100, h = 99·p: p50 → h = 49.5, between the 50th and 51st smallest (50 and 51) →
// 50.5; p90 → h = 89.1 → 90 + 0.1 = 90.1; p99 → h = 98.01 → 99 + 0.01 = 99.01.
TEST(MonteCarloTest, PercentilesInterpolateBetweenClosestRanks) {
  std::vector<TrialOutcome> v;
  for (int i = 100; i >= 1; --i) {
    TrialOutcome o;
    o.trial = i;
    o.wall_time_s = i;
    v.push_back(o);
  }
  MonteCarloSummary s = Summarize(v);
  EXPECT_DOUBLE_EQ(s.wall_time_s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.wall_time_s.p50, 50.5);
  EXPECT_DOUBLE_EQ(s.wall_time_s.p90, 90.1);
  EXPECT_DOUBLE_EQ(s.wall_time_s.p99, 99.01);
  // One sample is every percentile of itself; four samples 1, 2, 3, 10: p50 = 2.5 (midpoint),
  // p90: h = 2.7 → 3 + 0.7·7 = 7.9.
  EXPECT_DOUBLE_EQ(StatOf({3.0}).p99, 3.0);
  const Stat four = StatOf({10.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(four.mean, 4.0);
  EXPECT_DOUBLE_EQ(four.p50, 2.5);
  EXPECT_DOUBLE_EQ(four.p90, 7.9);
  // An empty set summarises to zeros rather than failing.
  EXPECT_EQ(StatOf({}).mean, 0.0);
}

// sim/parallel.h's promise carried through: trial k writes only outcome k and draws only from
// its own stream, so 2 and 4 threads give exactly one thread's outcomes, in trial order, with
// the shared step-time memo filled from several threads at once.
TEST(MonteCarloTest, ThreadsGiveIdenticalOutcomesInTrialOrder) {
  RunConfig c = testing::DemoLikeConfig();
  c.failures.enabled = true;
  c.failures.node_day_rate = 0.1;
  StepTimeCache one_cache(testing::SimpleStep());
  Result<std::vector<TrialOutcome>> one = RunTrials(c, one_cache, 3, 40, 1);
  ASSERT_TRUE(one.ok());
  for (int threads : {2, 4}) {
    StepTimeCache cache(testing::SimpleStep());
    Result<std::vector<TrialOutcome>> many = RunTrials(c, cache, 3, 40, threads);
    ASSERT_TRUE(many.ok());
    ASSERT_EQ(many->size(), one->size());
    for (size_t i = 0; i < one->size(); ++i) {
      EXPECT_EQ(many->at(i).trial, int64_t(3 + i));
      EXPECT_EQ(many->at(i).wall_time_s, one->at(i).wall_time_s);
      EXPECT_EQ(many->at(i).cost_usd, one->at(i).cost_usd);
      EXPECT_EQ(many->at(i).failures, one->at(i).failures);
      EXPECT_EQ(many->at(i).steps, one->at(i).steps);
    }
    EXPECT_EQ(cache.distinct_states(), one_cache.distinct_states());
  }
}

// A failing step-time callback fails the run the same way at any thread count: the error is
// the lowest trial's, as one thread running in order would report it. Only histories in which
// a node fails reach the failing state (elastic recovery drops a replica), so the lowest failing
// trial is not trial 0 and not necessarily the one a thread finishes first.
TEST(MonteCarloTest, ThreadsReportTheLowestFailingTrialsError) {
  const RunConfig c = testing::ElasticRareFailuresConfig();
  StepTimeCache a(testing::FailsOnceShrunk()), b(testing::FailsOnceShrunk()),
      below(testing::FailsOnceShrunk());
  Result<std::vector<TrialOutcome>> one = RunTrials(c, a, 0, 16, 1);
  Result<std::vector<TrialOutcome>> four = RunTrials(c, b, 0, 16, 4);
  ASSERT_FALSE(one.ok());
  ASSERT_FALSE(four.ok());
  const std::string& m = one.status().message();
  const int first = testing::FailingTrial(m);
  EXPECT_GT(first, 0) << m;
  EXPECT_TRUE(RunTrials(c, below, 0, first, 1).ok());
  EXPECT_EQ(four.status().message(), m);
}

// The memo is keyed by the state's fields: equal states (built separately) call the function
// once; a state differing in any one field — replicas, a slowdown, a link factor, the
// checkpoint share — is a new entry; an error is not memoised and names the state by Key().
TEST(StepTimeCacheTest, CallsTheFunctionOncePerDistinctState) {
  int calls = 0;
  StepTimeCache cache([&calls](const RunState& s) -> Result<StepTiming> {
    ++calls;
    if (s.live_dp_replicas == 0) return Status::Internal("no replicas");
    return StepTiming{Time::Seconds(1), Time(), Time()};
  });
  RunState base;
  base.live_dp_replicas = 4;
  base.gpu_slowdown = {{3, 1.5}};
  base.nic_link_factor = {{7, 0.5}};
  base.checkpoint_traffic_share = 0.25;
  const RunState copy = base;
  ASSERT_TRUE(cache.Get(base).ok());
  ASSERT_TRUE(cache.Get(copy).ok());
  EXPECT_EQ(calls, 1);
  RunState a = base, b = base, c = base, d = base;
  a.live_dp_replicas = 3;
  b.gpu_slowdown = {{3, 1.25}};
  c.nic_link_factor = {{8, 0.5}};
  d.checkpoint_traffic_share = 0.5;
  for (const RunState& s : {a, b, c, d}) ASSERT_TRUE(cache.Get(s).ok());
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(cache.distinct_states(), 5u);
  RunState none = base;
  none.live_dp_replicas = 0;
  Result<StepTiming> bad = cache.Get(none);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("the step with 0 data-parallel replicas live"),
            std::string::npos)
      << bad.status().message();
  EXPECT_EQ(cache.distinct_states(), 5u);
}

TEST(MonteCarloTest, RejectsABackwardsRange) {
  RunConfig c = testing::DemoLikeConfig();
  StepTimeCache cache(testing::SimpleStep());
  EXPECT_FALSE(RunTrials(c, cache, 5, 4).ok());
}

// The requirement: under exponential failures the Monte Carlo optimum checkpoint interval is
// within 10% of Daly's formula, over a grid of (checkpoint cost δ, MTBF M).
TEST(MonteCarloTest, OptimumIntervalIsWithinTenPercentOfDaly) {
  struct Case {
    double delta_s, mtbf_s;
  };
  for (Case k : {Case{60, 3600}, Case{300, 4 * 3600}, Case{1800, 3 * 3600}}) {
    RunConfig c;
    c.nodes = 1;
    c.gpus_per_node = 1;
    c.nics_per_node = 1;
    // 1 s steps; work = 150 MTBFs, so each trial sees ~150 failures.
    c.total_steps = static_cast<int64_t>(150 * k.mtbf_s);
    c.checkpoint.policy = CheckpointPolicy::kSync;
    c.checkpoint.spec.parameters = static_cast<int64_t>(k.delta_s * 1e9);
    c.checkpoint.spec.bytes_per_param = 1;
    c.checkpoint.hardware.storage_write_GBps = 1;  // write = δ
    c.checkpoint.hardware.storage_read_GBps = 1e6;
    // Daly's model: failures restart in place after a fixed restart time, no detection delay.
    c.failures.enabled = true;
    c.failures.node_day_rate = 86400.0 / k.mtbf_s;
    c.failures.causes = {FailureCause{"crash", "software", 1, false, Time()}};
    c.recovery.detect.process_exit = Time();  // a software crash: PROCESS_EXIT
    c.recovery.scheduler_requeue = Time::Seconds(60);
    c.recovery.process_start = Time();
    c.recovery.comm_init_base = Time();
    c.recovery.comm_init_per_gpu = Time();
    StepTimeCache cache([](const RunState&) -> Result<StepTiming> {
      return StepTiming{Time::Seconds(1), Time(), Time()};
    });
    // A grid that knows nothing of Young or Daly: 10^(k/8) s (ratio 1.33) within [M/50, M].
    std::vector<double> grid;
    for (int e = 0; e <= 48; ++e) {
      const double g = std::pow(10.0, e / 8.0);
      if (g >= k.mtbf_s / 50 && g <= k.mtbf_s) grid.push_back(g);
    }
    Result<IntervalOptimum> opt = OptimizeCheckpointInterval(c, cache, 40, grid);
    ASSERT_TRUE(opt.ok()) << opt.status().message();
    EXPECT_DOUBLE_EQ(opt->delta_s, k.delta_s);
    EXPECT_DOUBLE_EQ(opt->mtbf_s, k.mtbf_s);
    EXPECT_NEAR(opt->fitted_s / opt->daly_s, 1.0, 0.10)
        << "δ=" << k.delta_s << " M=" << k.mtbf_s << " fitted " << opt->fitted_s << " grid best "
        << opt->best_grid_s << " Daly " << opt->daly_s << " Young " << opt->young_s;
  }
}

// A checkpoint interval shorter than one step checkpoints after every step: the default grid
// starts at one step, and where its span holds fewer whole steps than grid points it takes each
// whole number of steps once (the 16,384-GPU example scanned 21 points, 8 of them one run).
// δ 1 ms and M 1 h give Daly ≈ sqrt(2 · 0.001 · 3600) = 2.7 s, below the 10 s step.
TEST(MonteCarloTest, DefaultGridStartsAtOneStepAndTakesWholeStepsWhenFew) {
  RunConfig c;
  c.nodes = 1;
  c.gpus_per_node = 1;
  c.nics_per_node = 1;
  c.total_steps = 2000;
  c.checkpoint.policy = CheckpointPolicy::kSync;
  c.checkpoint.spec.parameters = 1000000;  // 1 MB at 1 GB/s: δ = 1 ms
  c.checkpoint.spec.bytes_per_param = 1;
  c.checkpoint.hardware.storage_write_GBps = 1;
  c.checkpoint.hardware.storage_read_GBps = 1e6;
  c.failures.enabled = true;
  c.failures.node_day_rate = 24;  // M = 1 h
  c.failures.causes = {FailureCause{"crash", "software", 1, false, Time()}};
  StepTimeCache cache([](const RunState&) -> Result<StepTiming> {
    return StepTiming{Time::Seconds(10), Time(), Time()};
  });
  Result<IntervalOptimum> opt = OptimizeCheckpointInterval(c, cache, 4);
  ASSERT_TRUE(opt.ok()) << opt.status().message();
  ASSERT_LT(opt->daly_s, 10.0);
  ASSERT_FALSE(opt->scan.empty());
  // lo = the 10 s step; hi = max(4 · Daly, 4 · lo) = 40 s: 10, 20, 30 and 40 s.
  ASSERT_EQ(opt->scan.size(), 4u);
  for (size_t i = 0; i < opt->scan.size(); ++i) {
    EXPECT_DOUBLE_EQ(opt->scan[i].interval_s, 10.0 * double(i + 1));
  }
}

}  // namespace
}  // namespace trainsim::run
