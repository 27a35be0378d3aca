// `trainsim whatif` through the binary: output, JSON names, determinism, bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace trainsim::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

Outcome RunCommand(const std::vector<std::string>& args) {
  test_util::RunResult r = test_util::RunTrainsim(args);
  return {r.exit_code, r.out, r.err};
}

constexpr char kDemo[] = "scenarios/examples/demo.textproto";

TEST(WhatIfCommandTest, JsonHasBothRunsAndTheDelta) {
  Outcome o = RunCommand({"whatif", kDemo, "--fail", "gpu:37@16h", "--json"});
  ASSERT_EQ(o.exit_code, kExitOk) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  for (const char* side : {"baseline", "whatif"}) {
    for (const char* key : {"wall_time_s", "useful_compute_fraction", "ettr", "failures",
                            "failures_by_cause", "checkpoints", "lost_work_s", "cost_usd"}) {
      EXPECT_TRUE(j[side].contains(key)) << side << "." << key;
    }
    double sum = 0;
    for (const char* key : {"useful", "exposed_comm", "bubble", "slowdown", "checkpoint_stall",
                            "lost", "unfinished_step", "detection", "restart", "waiting"}) {
      sum += j[side]["breakdown_s"][key].get<double>();
    }
    EXPECT_NEAR(sum, j[side]["wall_time_s"].get<double>(), 1e-6);
  }
  // delta is exact in nanoseconds; the difference of the two printed doubles may round.
  EXPECT_NEAR(j["delta"]["wall_time_s"].get<double>(),
              j["whatif"]["wall_time_s"].get<double>() - j["baseline"]["wall_time_s"].get<double>(),
              1e-6);
  // Stable cause keys; trial 0's own stochastic GPU failure counts as "GPU".
  EXPECT_EQ(j["whatif"]["failures_by_cause"]["SCHEDULED_GPU"], 1);
  const nlohmann::json& added = j["added_faults"].at(0);
  EXPECT_TRUE(added["interrupted_training"].get<bool>());
  EXPECT_EQ(added["mechanism"], "PROCESS_EXIT");  // a GPU Xid crashes the process
  EXPECT_DOUBLE_EQ(added["detected_after_s"].get<double>(), 5.0);
  EXPECT_EQ(j["trials"]["n"], 100);  // stochastic failures on: 100 histories by default
  EXPECT_GT(added["restored_checkpoint"].get<int>(), 0);
  EXPECT_GT(added["resumed_at_s"].get<double>(), 16 * 3600.0);
}

TEST(WhatIfCommandTest, TableNamesTheRestoredCheckpointAndIsDeterministic) {
  Outcome a = RunCommand({"whatif", kDemo, "--fail", "gpu:37@16h", "--slow", "gpu:5x1.3@1h+4h"});
  Outcome b = RunCommand({"whatif", kDemo, "--fail", "gpu:37@16h", "--slow", "gpu:5x1.3@1h+4h"});
  ASSERT_EQ(a.exit_code, kExitOk) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("restored checkpoint #"), std::string::npos);
  EXPECT_NE(a.out.find("training resumed at"), std::string::npos);
  EXPECT_NE(a.out.find("gpu 5 slows by 1.3x"), std::string::npos);
}

TEST(WhatIfCommandTest, TrialsReportTheDistributionOfTheDelta) {
  Outcome o = RunCommand({"whatif", kDemo, "--fail", "node:2@1d", "--trials", "20", "--json"});
  ASSERT_EQ(o.exit_code, kExitOk) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  const nlohmann::json& t = j["trials"];
  EXPECT_EQ(t["n"], 20);
  const nlohmann::json& w = t["delta_wall_time_s"];
  EXPECT_LE(w["p50"].get<double>(), w["p90"].get<double>());
  EXPECT_LE(w["p90"].get<double>(), w["p99"].get<double>());
  // A node failure adds at least its detection (HEARTBEAT, 15 s) and a restart of downtime.
  EXPECT_GE(t["delta_downtime_s"]["p50"].get<double>(), 15.0);
}

TEST(WhatIfCommandTest, BadInputExitsTwoWithAMessageAndNoOutput) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"whatif", kDemo},                           // no fault
           {"whatif", kDemo, "--fail", "gpu:999@16h"},  // no such GPU
           {"whatif", kDemo, "--fail", "disk:3@1h"},    // unknown kind
           {"whatif", kDemo, "--slow", "node:3@1h"},    // not a slowdown
           {"whatif", kDemo, "--fail", "gpu:3@1h", "--set", "failures.node_day_rate=-1"},
           {"whatif", kDemo, "--fail", "gpu:3@1h", "--trials", "-1"},
       }) {
    Outcome o = RunCommand(args);
    EXPECT_EQ(o.exit_code, kExitBadInput) << args.back();
    EXPECT_TRUE(o.out.empty()) << args.back();
    EXPECT_NE(o.err.find("trainsim: error: "), std::string::npos) << args.back();
  }
}

TEST(WhatIfCommandTest, AFaultAfterTheEndHasNoEffectAndExitsZeroWithANote) {
  Outcome o = RunCommand({"whatif", kDemo, "--fail", "gpu:3@30d", "--trials", "0"});
  ASSERT_EQ(o.exit_code, kExitOk) << o.err;
  EXPECT_NE(o.out.find("note: added fault 1 (gpu 3 fails at 30d) has no effect"), std::string::npos)
      << o.out;
}

TEST(WhatIfCommandTest, ADuplicateFaultWarnsOnStderr) {
  Outcome o =
      RunCommand({"whatif", kDemo, "--fail", "gpu:3@1d", "--fail", "gpu:3@1d", "--trials", "0"});
  ASSERT_EQ(o.exit_code, kExitOk) << o.err;
  EXPECT_NE(o.err.find("trainsim: warning: added fault 2 (gpu 3 fails at 1d) duplicates"),
            std::string::npos)
      << o.err;
}

TEST(WhatIfCommandTest, EachFaultPrintsItsDetectionMechanismAndDelay) {
  Outcome o = RunCommand({"whatif", kDemo, "--fail", "software@16h", "--fail", "hang:9@20h",
                          "--fail", "link:5@1d", "--trials", "0"});
  ASSERT_EQ(o.exit_code, kExitOk) << o.err;
  for (const char* part : {"software crash at 16h: detected by PROCESS_EXIT after 5.000 s",
                           "gpu 9 hangs at 20h: detected by COLLECTIVE_TIMEOUT after 10.00 min",
                           "link 5 goes down at 1d: detected by NCCL_ERROR after 34.360 s"}) {
    EXPECT_NE(o.out.find(part), std::string::npos) << part << "\n" << o.out;
  }
}

// The demo trains 3 weeks; an SDC 30 minutes before the end would be found by the hourly loss
// check after it. whatif said "did not interrupt training (its node was already out of the
// job, or a rollback wiped it first)", neither of which happened; run --json listed nothing.
TEST(WhatIfCommandTest, ACorruptionFoundOnlyAfterTheEndIsSaidToBeUndetected) {
  Outcome o = RunCommand({"whatif", kDemo, "--fail", "sdc:5@20d23h30m", "--trials", "0"});
  ASSERT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("not found before training ended (the loss check would find it at "
                       "21d0h30m)"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("did not interrupt training"), std::string::npos) << o.out;
  // The demo checkpoints hourly; none completes in the last 30 minutes after the corruption.
  EXPECT_NE(o.out.find("no checkpoint was taken after it"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace trainsim::cli
