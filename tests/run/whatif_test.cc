#include "run/whatif.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/run/run_test_util.h"

namespace trainsim::run {
namespace {

using sim::Time;
using testing::DemoLikeConfig;
using testing::ElasticRareFailuresConfig;
using testing::FailingTrial;
using testing::FailsOnceShrunk;
using testing::Fault;
using testing::SimpleStep;

TEST(WhatIfTest, WallClockGoalComparesTheSameTrainingWithAndWithoutTheFault) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 0;
  c.wall_time_limit = Time::Days(3);
  StepTimeCache cache(SimpleStep());
  Result<WhatIfReport> w =
      SimulateWhatIf(c, {Fault(ScheduledFault::Kind::kGpu, 37, Time::Hours(16))}, cache);
  ASSERT_TRUE(w.ok()) << w.status().message();
  // 3 days = 259,200 s hold 71 full (180 steps + 24.5 s) hours = 257,339.5 s, then 1,860.5 s:
  // 93 steps and half a second of a step that does not finish.
  EXPECT_EQ(w->steps, 71 * 180 + 93);
  EXPECT_EQ(w->baseline.total_steps, w->steps);
  EXPECT_EQ(w->whatif.total_steps, w->steps);
  // Same closed form as RunSimulationTest.Gpu37At16hCostsLostWorkPlusDetectionPlusRestart.
  const Time lost = Time::Hours(16) - (Time::Hours(1) + Time::Millis(24500)) * 15;
  const Time restart =
      Time::Minutes(5) + Time::Seconds(10) + Time::Millis(2) * 128 + Time::Micros(6125000);
  EXPECT_DOUBLE_EQ(w->delta_wall_time_s, (lost + Time::Seconds(5) + restart).seconds());
  EXPECT_DOUBLE_EQ(w->delta_lost_work_s, lost.seconds());
  EXPECT_GT(w->delta_cost_usd, 0);
  EXPECT_EQ(w->whatif.failure_records.at(0).restored_checkpoint, 15);
}

// Failures make the baseline of a wall-clock goal train its steps later than the fault-free run
// would, so a fault can lie before the baseline's end and after the fault-free end. It is
// simulated, not rejected (it was, as a fault "after the end of training"), in the shown
// trial and in every Monte Carlo trial.
TEST(WhatIfTest, FaultBeforeTheBaselinesEndButAfterTheFaultFreeEndIsSimulated) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 0;
  c.wall_time_limit = Time::Days(3);
  c.failures.enabled = true;
  c.failures.node_day_rate = 0.1;  // ~5 interruptions over 3 days on 16 nodes
  // A minute before the 3-day end: before the end of the baseline's last 20-s step.
  const std::vector<ScheduledFault> added = {
      Fault(ScheduledFault::Kind::kGpu, 37, Time::Days(3) - Time::Minutes(1))};
  StepTimeCache cache(SimpleStep());
  Result<WhatIfReport> w = SimulateWhatIf(c, added, cache, 0);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_GT(w->baseline.failures, 0);  // else the fault-free run would end as late
  // The premise: without failures the baseline's steps end before the added fault.
  RunConfig clean = c;
  clean.wall_time_limit.reset();
  clean.total_steps = w->steps;
  clean.failures.enabled = false;
  StepTimeCache clean_cache(SimpleStep());
  Result<RunReport> fault_free = SimulateRun(clean, clean_cache);
  ASSERT_TRUE(fault_free.ok()) << fault_free.status().message();
  ASSERT_LT(fault_free->wall_time, added[0].at);
  EXPECT_FALSE(w->no_effect.at(0));
  EXPECT_GT(w->delta_wall_time_s, 0);
  EXPECT_EQ(w->whatif.failures, w->baseline.failures + 1);
  Result<WhatIfSamples> trials = SimulateWhatIfTrials(c, added, cache, 8, 2);
  ASSERT_TRUE(trials.ok()) << trials.status().message();
  EXPECT_EQ(trials->delta_wall_time_s.at(0), w->delta_wall_time_s);
}

// The trials' samples are each trial's SimulateWhatIf with its event log kept: leaving the log
// out changes no difference. Sample k is trial k's at any thread count.
TEST(WhatIfTest, TrialSamplesAreEachTrialsComparisonWithOrWithoutTheEventLog) {
  RunConfig c = DemoLikeConfig();
  c.failures.enabled = true;
  c.failures.node_day_rate = 0.1;  // ~1.6 interruptions a day on 16 nodes: histories differ
  ASSERT_TRUE(c.record_events);
  const std::vector<ScheduledFault> added = {
      Fault(ScheduledFault::Kind::kGpu, 37, Time::Hours(16))};
  constexpr int64_t kTrials = 12;
  StepTimeCache one_cache(SimpleStep());
  Result<WhatIfSamples> one = SimulateWhatIfTrials(c, added, one_cache, kTrials, 1);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_EQ(one->delta_wall_time_s.size(), size_t(kTrials));
  bool differ = false;
  for (int64_t k = 0; k < kTrials; ++k) {
    StepTimeCache cache(SimpleStep());
    Result<WhatIfReport> w = SimulateWhatIf(c, added, cache, k);
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_FALSE(w->baseline.events.empty());  // this side kept its log
    const size_t i = size_t(k);
    EXPECT_EQ(one->delta_wall_time_s[i], w->delta_wall_time_s) << "trial " << k;
    EXPECT_EQ(one->delta_cost_usd[i], w->delta_cost_usd) << "trial " << k;
    EXPECT_EQ(one->delta_lost_work_s[i], w->delta_lost_work_s) << "trial " << k;
    EXPECT_EQ(one->delta_downtime_s[i], w->delta_downtime_s) << "trial " << k;
    differ = differ || one->delta_wall_time_s[i] != one->delta_wall_time_s[0];
  }
  EXPECT_TRUE(differ) << "every history gave the same difference: the test compares nothing";
  StepTimeCache three_cache(SimpleStep());
  Result<WhatIfSamples> three = SimulateWhatIfTrials(c, added, three_cache, kTrials, 3);
  ASSERT_TRUE(three.ok()) << three.status().message();
  EXPECT_EQ(three->delta_wall_time_s, one->delta_wall_time_s);
  EXPECT_EQ(three->delta_cost_usd, one->delta_cost_usd);
  EXPECT_EQ(three->delta_lost_work_s, one->delta_lost_work_s);
  EXPECT_EQ(three->delta_downtime_s, one->delta_downtime_s);
}

// An error is the lowest failing trial's, named, at any thread count. Only histories in which a
// node fails reach the failing state (elastic recovery drops a replica), so trial 0 succeeds
// and the error names a later trial, whichever thread finished first.
TEST(WhatIfTest, TrialsReportTheLowestFailingTrialByIndex) {
  const RunConfig c = ElasticRareFailuresConfig();
  // A straggler: no node leaves, so the added fault alone shrinks no history.
  const std::vector<ScheduledFault> added = {
      Fault(ScheduledFault::Kind::kStraggler, 37, Time::Hours(16), Time::Hours(2), 1.5)};
  StepTimeCache a(FailsOnceShrunk()), b(FailsOnceShrunk()), below(FailsOnceShrunk());
  Result<WhatIfSamples> one = SimulateWhatIfTrials(c, added, a, 16, 1);
  Result<WhatIfSamples> four = SimulateWhatIfTrials(c, added, b, 16, 4);
  ASSERT_FALSE(one.ok());
  ASSERT_FALSE(four.ok());
  const std::string& m = one.status().message();
  const int first = FailingTrial(m);
  EXPECT_GT(first, 0) << m;  // else the test would not tell the lowest trial from the first
  EXPECT_NE(m.find("shrunk"), std::string::npos) << m;
  // The trials below `first` succeed on their own.
  EXPECT_TRUE(SimulateWhatIfTrials(c, added, below, first, 1).ok());
  EXPECT_EQ(four.status().message(), m);
}

// A scenario's own fault late in a wall-clock goal, checked as `trainsim run` checks it (not
// against the fault-free end of the baseline's steps, which refused it). The bounded run meets
// it 0.25 s before the end and rolls back to checkpoint 71, so both sides train 71 hours' steps;
// the baseline ends before the fault, and the what-if side, delayed by its added fault, meets it.
TEST(WhatIfTest, AScenarioFaultNearAWallClockGoalsEndIsSimulatedWhereTheRunReachesIt) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 0;
  c.wall_time_limit = Time::Days(3);
  const Time late = Time::Days(3) - Time::Millis(250);
  c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 3, late));
  StepTimeCache cache(SimpleStep());
  Result<WhatIfReport> w =
      SimulateWhatIf(c, {Fault(ScheduledFault::Kind::kGpu, 37, Time::Hours(16))}, cache);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->steps, 71 * 180);  // hourly checkpoints of 180 steps (WallClockGoal... above)
  EXPECT_LT(w->baseline.wall_time, late);
  EXPECT_EQ(w->baseline.failures, 0);
  EXPECT_GT(w->whatif.wall_time, late);
  EXPECT_EQ(w->whatif.failures, 2);
  const Time lost = Time::Hours(16) - (Time::Hours(1) + Time::Millis(24500)) * 15;
  EXPECT_GT(w->delta_lost_work_s, lost.seconds());  // the added fault's, and the late one's
}

}  // namespace
}  // namespace trainsim::run
