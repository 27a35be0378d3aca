#include "run/whatif.h"

#include <gtest/gtest.h>

#include "tests/run/run_test_util.h"

namespace trainsim::run {
namespace {

using sim::Time;
using testing::DemoLikeConfig;
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

}  // namespace
}  // namespace trainsim::run
