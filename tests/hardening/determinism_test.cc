// Determinism: the same scenario and seed give byte-identical output — across
// two runs, across working directories and locales, and (for sweep) across `mpirun -np 1` and
// `-np 2`. Compared byte for byte, never parsed, so a reordered key or a changed last digit fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace trainsim::hardening {
namespace {

using test_util::ReadFileOrEmpty;
using test_util::RunLimits;
using test_util::RunProgram;
using test_util::RunResult;
using test_util::RunTrainsim;

namespace fs = std::filesystem;

const std::string kSource = TRAINSIM_SOURCE_DIR;
const std::string kDemo = kSource + "/scenarios/examples/demo.textproto";
const std::string kSmall = kSource + "/scenarios/examples/small.json";

fs::path ScratchDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() /
               ("trainsim_determinism_" + std::to_string(::getpid()) + "_" + name);
  fs::create_directories(d);
  return d;
}

// Runs `args` twice — once from the source tree, once from a scratch directory under another
// locale and time zone — and expects identical stdout, exit 0 and an empty stderr.
void ExpectIdenticalTwice(const std::vector<std::string>& args) {
  std::string shown;
  for (const std::string& a : args) shown += " " + a;
  SCOPED_TRACE("trainsim" + shown);
  RunLimits limits;
  limits.timeout_s = 120;
  RunResult a = RunTrainsim(args, "", limits);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::vector<std::string> env_args = {"env", "LC_ALL=C.UTF-8", "TZ=Pacific/Kiritimati",
                                       TRAINSIM_BINARY};
  env_args.insert(env_args.end(), args.begin(), args.end());
  RunResult b = RunProgram(env_args, ScratchDir("b").string(), limits);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, b.out) << "outputs differ";
  EXPECT_EQ(a.err, b.err);
  fs::remove_all(ScratchDir("b"));
}

TEST(DeterminismTest, CheckJsonIsByteIdentical) {
  ExpectIdenticalTwice({"check", kDemo, "--json"});
  ExpectIdenticalTwice({"check", kSmall, "--json"});
}

TEST(DeterminismTest, RunStepReportIsByteIdentical) {
  ExpectIdenticalTwice({"run", kDemo, "--json"});
  ExpectIdenticalTwice({"run", kSmall});
}

TEST(DeterminismTest, RunTraceFileIsByteIdentical) {
  fs::path d = ScratchDir("trace");
  RunResult a = RunTrainsim({"run", kSmall, "--trace", (d / "a.json").string()});
  RunResult b = RunTrainsim({"run", kSmall, "--trace", (d / "b.json").string()});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string ta = ReadFileOrEmpty((d / "a.json").string());
  EXPECT_FALSE(ta.empty());
  EXPECT_TRUE(ta == ReadFileOrEmpty((d / "b.json").string())) << "trace files differ";
  fs::remove_all(d);
}

TEST(DeterminismTest, WhatIfRunSimulationIsByteIdentical) {
  // The run simulation draws random failures from the scenario's seed: same seed, same history.
  ExpectIdenticalTwice({"whatif", kSmall, "--fail", "gpu:3@10h", "--json"});
  ExpectIdenticalTwice({"whatif", kDemo, "--fail", "node:2@5h", "--events"});
  ExpectIdenticalTwice({"whatif", kSmall, "--fail", "gpu:3@10h", "--trials", "4", "--json"});
}

TEST(DeterminismTest, ADifferentSeedChangesTheFailureHistory) {
  // The other side of the promise: the seed is actually used (a constant output would also be
  // "deterministic"). failures.enabled is true in small.json.
  RunResult a = RunTrainsim({"whatif", kSmall, "--fail", "gpu:3@10h", "--json", "--trials", "8"});
  RunResult b = RunTrainsim(
      {"whatif", kSmall, "--fail", "gpu:3@10h", "--json", "--trials", "8", "--set", "seed=12345"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(a.out, b.out);
}

TEST(DeterminismTest, CollectiveTableIsByteIdentical) {
  ExpectIdenticalTwice({"collective", kDemo, "--op", "all_reduce", "--json"});
  ExpectIdenticalTwice(
      {"collective", kDemo, "--op", "all_reduce", "--sizes", "1MiB:64MiB", "--expand"});
}

bool HasSweep() {
  RunResult r = RunTrainsim({"sweep", "--help"});
  return r.exit_code == 0;
}

TEST(DeterminismTest, SweepIsByteIdenticalAcrossRunsAndMpiRanks) {
  if (!HasSweep()) GTEST_SKIP() << "trainsim sweep does not exist in this build";
  ExpectIdenticalTwice({"sweep", kSmall, "--json"});
  const std::string mpiexec = TRAINSIM_MPIEXEC;
  if (mpiexec.empty()) GTEST_SKIP() << "no MPI launcher found by CMake";
  RunLimits limits;
  limits.timeout_s = 300;
  auto mpirun = [&](const std::string& np) {
    return RunProgram({mpiexec, "--oversubscribe", "--allow-run-as-root", "-np", np,
                       TRAINSIM_BINARY, "sweep", kSmall, "--json"},
                      "", limits);
  };
  RunResult one = mpirun("1");
  RunResult two = mpirun("2");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.err;
  RunResult plain = RunTrainsim({"sweep", kSmall, "--json"}, "", limits);
  EXPECT_EQ(one.out, plain.out);
  EXPECT_EQ(one.out, two.out) << "mpirun -np 2 differs from -np 1";
}

}  // namespace
}  // namespace trainsim::hardening
