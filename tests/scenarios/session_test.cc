// scenarios/session.h: what the commands ask of a loaded scenario.
#include "scenarios/session.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenarios/step_config.h"

namespace trainsim::scenarios {
namespace {

constexpr char kDemo[] = "scenarios/examples/demo.textproto";

ResolvedScenario Demo(std::vector<std::string> sets = {}) {
  auto s = LoadScenario(kDemo, sets);
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto r = Resolve(*s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

TEST(SessionTest, ScenarioCalibrationComesFromFlagOrScenario) {
  // No calibration anywhere: none.
  auto none = LoadScenarioCalibration(Demo(), "");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none->has_value());
  // The flag: the checked-in H100 sample, for the demo's H100 scenario.
  auto flag = LoadScenarioCalibration(Demo(), "scenarios/calibration/dgx_h100_sample.json");
  ASSERT_TRUE(flag.ok()) << flag.status().message();
  ASSERT_TRUE(flag->has_value());
  EXPECT_TRUE((*flag)->is_sample());
  // The scenario field (relative to the scenario file), on the wrong GPU: an error.
  auto h200 =
      LoadScenarioCalibration(Demo({"cluster.calibration=../calibration/dgx_h100_sample.json",
                                    "cluster.gpu=H200-SXM-141GB", "cluster.node_type=DGX-H200"}),
                              "");
  ASSERT_FALSE(h200.ok());
  EXPECT_NE(h200.status().message().find("H200-SXM-141GB"), std::string::npos)
      << h200.status().message();
}

TEST(SessionTest, RunOutcomeCarriesTheTypedRunAndItsPhases) {
  const ResolvedScenario r = Demo();
  Result<step::StepConfig> step = MakeStepConfig(r);
  ASSERT_TRUE(step.ok()) << step.status().message();
  Result<RunOutcome> o = SimulateScenarioRun(r, *step, RunRequest{});
  ASSERT_TRUE(o.ok()) << o.status().message();
  ASSERT_FALSE(o->run.phases.empty());
  EXPECT_EQ(o->run.phases.front().start, sim::Time());
  EXPECT_EQ(o->run.phases.back().end, o->run.wall_time);
}

TEST(SessionTest, GpuGroupForms) {
  EXPECT_EQ(ParseGpuGroup("4", 16).value(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ParseGpuGroup("2/8", 16).value(), (std::vector<int>{0, 8}));
  EXPECT_EQ(ParseGpuGroup("0,5,9", 16).value(), (std::vector<int>{0, 5, 9}));
  EXPECT_FALSE(ParseGpuGroup("17", 16).ok());
  EXPECT_FALSE(ParseGpuGroup("0,16", 16).ok());
  EXPECT_FALSE(ParseGpuGroup("x", 16).ok());
}

}  // namespace
}  // namespace trainsim::scenarios
