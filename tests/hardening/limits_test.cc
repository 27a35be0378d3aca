// Scale limits: the supported sizes run, and anything beyond a limit gets a
// clear message and exit 2 — never an allocation failure or a silent hang. Times and peak memory
// of the limit scenarios are recorded in bench/README.md (`## limits`); these tests hold only
// generous ceilings (the machine is shared) so that a hang or a blow-up fails, not a slow CI.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace trainsim::hardening {
namespace {

using test_util::Contains;
using test_util::RunLimits;
using test_util::RunResult;
using test_util::RunTrainsim;

const std::string kLimits = std::string(TRAINSIM_SOURCE_DIR) + "/tests/hardening/limits/";

RunResult RunWithin(const std::vector<std::string>& args, int timeout_s, long memory_bytes = -1) {
  RunLimits limits;
  limits.timeout_s = timeout_s;
  limits.memory_limit_bytes = memory_bytes;
  return RunTrainsim(args, "", limits);
}

constexpr long kGiB = 1L << 30;

TEST(LimitsTest, CheckResolves16kAnd128kGpuScenariosQuicklyInLittleMemory) {
  for (const char* f : {"gpus_16k.textproto", "gpus_128k.textproto"}) {
    RunResult r = RunWithin({"check", kLimits + f}, 30, 2 * kGiB);
    EXPECT_FALSE(r.timed_out) << f;
    EXPECT_EQ(r.exit_code, 0) << f << "\n" << r.err;
  }
  RunResult r = RunWithin({"check", kLimits + "gpus_128k.textproto", "--json"}, 30, 2 * kGiB);
  // 16,384 nodes x 8 GPUs, the whole cluster in the layout: TP 8 x PP 8 x DP 2048.
  EXPECT_TRUE(Contains(r.out, "131072")) << r.out.substr(0, 2000);
}

TEST(LimitsTest, AStepWithTenThousandMicroBatchesRuns) {
  RunResult r = RunWithin({"run", kLimits + "microbatches_10k.textproto", "--json"}, 120, 2 * kGiB);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(LimitsTest, MoreMicroBatchesThanSupportedIsAClearErrorNotAnAllocationFailure) {
  RunResult r = RunWithin(
      {"run", kLimits + "microbatches_10k.textproto", "--set", "parallelism.global_batch=2000000"},
      30, 2 * kGiB);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "at most 1000000 are supported")) << r.err;
}

TEST(LimitsTest, MoreNodesThanSupportedIsAClearError) {
  RunResult r = RunWithin({"check", kLimits + "gpus_128k.textproto", "--set",
                           "cluster.nodes=2000000", "--set", "parallelism.dp=250000"},
                          30, 2 * kGiB);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // The real bound for 8-GPU nodes (the working-memory limit), not a looser sanity range (a new
  // user's --set cluster.nodes=-1 was told "between 1 and 1000000").
  EXPECT_TRUE(Contains(r.err, "above the limit of 524288 GPUs")) << r.err;
  EXPECT_TRUE(Contains(r.err, "use at most 65536 nodes")) << r.err;
  RunResult low = RunWithin({"check", kLimits + "gpus_128k.textproto", "--set", "cluster.nodes=-1"},
                            30, 2 * kGiB);
  EXPECT_EQ(low.exit_code, 2) << low.err;
  EXPECT_TRUE(Contains(low.err, "nodes must be between 1 and 65536 (nodes of 8 GPUs)")) << low.err;
}

TEST(LimitsTest, AYearLongRunSimulates) {
  // 365 days of hourly checkpoints and random failures on 1,024 GPUs (the run simulation).
  RunResult r = RunWithin(
      {"whatif", kLimits + "days_365.textproto", "--fail", "gpu:3@100d", "--json"}, 300, 4 * kGiB);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The step simulation at 16,384 and 131,072 GPUs (GPT-3 175B, TP 8 × PP 8): every data-parallel
// collective runs as flows, however many nodes its group spans (StepConfig::
// flow_collective_max_nodes has no line by default since issue 20's session 11; it was 128
// nodes, and the output then said which reductions were timed in closed form), and `run` still
// answers in seconds (bench/README.md, "Issue 20, session 11": ~0.7 s and ~2 s of CPU).
TEST(LimitsTest, StepAndRunOn16kAnd128kGpusFinishWithDpOnFlows) {
  for (const char* f : {"gpus_16k.textproto", "gpus_128k.textproto"}) {
    RunResult r = RunWithin({"run", kLimits + f}, 300, 4 * kGiB);
    ASSERT_FALSE(r.timed_out) << f << ": no answer in 300 s";
    EXPECT_EQ(r.exit_code, 0) << f << "\n" << r.err;
    EXPECT_TRUE(Contains(r.out, "data-parallel replicas")) << r.out.substr(0, 2000);
    EXPECT_FALSE(Contains(r.out, "closed form")) << r.out.substr(0, 2000);
  }
}

TEST(LimitsTest, WhatifOn128kGpusFinishes) {
  RunResult r = RunWithin(
      // One failure history: the limit is the scale of one run; the default distribution over
      // 100 histories costs 100 times that.
      {"whatif", kLimits + "gpus_128k.textproto", "--fail", "gpu:37@2h", "--json", "--trials", "0"},
      300, 4 * kGiB);
  ASSERT_FALSE(r.timed_out) << "no answer in 300 s";
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A guard against a hang, not a speed target (those live in bench/): generous for ASan on a
// loaded 2-core CI machine.
constexpr int kSweepGuardS = 600;

TEST(LimitsTest, SmallSweepOn16kGpusFinishes) {
  // The whole default space, top 3.
  RunResult r =
      RunWithin({"sweep", kLimits + "gpus_16k.textproto", "--tokens", "3e11", "--top", "3"},
                kSweepGuardS, 4 * kGiB);
  ASSERT_FALSE(r.timed_out) << "no answer in " << kSweepGuardS << " s";
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "confirmed by the step simulation")) << r.out.substr(0, 2000);
}

TEST(LimitsTest, SmallSweepOn128kGpusFinishes) {
  // The space of 2025 (no CP, even stages), 2,442 layouts: the default space there is 24,507
  // layouts, 17 s in a Release build (bench/README.md); the estimator's cost at 128k GPUs is
  // issue 20's (speed at every scale). The top 1, not 3: the sweep confirms the top K and the
  // Pareto front by simulation (issue 16), 6 step simulations of 131,072 GPUs for --top 3 against
  // 2 for --top 1 (11 s in Release).
  // Release only: under ASan this one case took 190-260 s of the sanitizer stage's ~11 minutes
  // on the 2-core CI machine, to run code the 16k case above already runs under ASan; what it
  // adds is the scale itself, which is a property of the Release build users run.
  if (test_util::BuiltWithAddressSanitizer()) {
    GTEST_SKIP() << "scale check, run in the Release build (the 16k sweep runs under ASan)";
  }
  RunResult r = RunWithin({"sweep", kLimits + "gpus_128k.textproto", "--tokens", "3e11", "--top",
                           "1", "--cp", "1", "--no-uneven"},
                          kSweepGuardS, 4 * kGiB);
  ASSERT_FALSE(r.timed_out) << "no answer in " << kSweepGuardS << " s";
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "confirmed by the step simulation")) << r.out.substr(0, 2000);
}

}  // namespace
}  // namespace trainsim::hardening
