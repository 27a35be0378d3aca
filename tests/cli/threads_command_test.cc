// --threads through the binary: `run --trials`, `whatif --trials` and `validate` print the same
// bytes at 1, 2 and 4 threads (sim/parallel.h: results by index, per-trial random streams), and a
// thread count out of range is one error line with exit status 2.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace trainsim::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;
constexpr char kDemo[] = "scenarios/examples/demo.textproto";

// stdout of `args` + --threads N for each N in `counts` (the first 1); every one must succeed
// and match the first.
void ExpectSameOutputAtAnyThreadCount(std::vector<std::string> args,
                                      std::vector<std::string> counts = {"1", "2", "4"}) {
  std::string one;
  for (const std::string& threads : counts) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--threads", threads});
    test_util::RunResult r = test_util::RunTrainsim(a);
    ASSERT_EQ(r.exit_code, kExitOk) << threads << " threads: " << r.err;
    ASSERT_FALSE(r.out.empty());
    if (one.empty()) {
      one = r.out;
    } else {
      EXPECT_EQ(r.out, one) << args[0] << " at " << threads << " threads differs from 1 thread";
    }
  }
}

TEST(ThreadsCommandTest, RunTrialsAreByteIdenticalAtAnyThreadCount) {
  ExpectSameOutputAtAnyThreadCount({"run", kDemo, "--trials", "24", "--json"});
}

TEST(ThreadsCommandTest, WhatIfTrialsAreByteIdenticalAtAnyThreadCount) {
  ExpectSameOutputAtAnyThreadCount(
      {"whatif", kDemo, "--fail", "gpu:37@16h", "--trials", "24", "--json"});
}

TEST(ThreadsCommandTest, ValidateRowsAreByteIdenticalAtAnyThreadCount) {
  // 1 and 4 only: every row is a step simulation (0.3 s of CPU for the set), and 4 threads on a
  // 2-core machine already interleave the rows in every order 2 would.
  ExpectSameOutputAtAnyThreadCount({"validate", "--json"}, {"1", "4"});
}

TEST(ThreadsCommandTest, ANegativeThreadCountIsBadInput) {
  test_util::RunResult r = test_util::RunTrainsim({"run", kDemo, "--threads", "-1"});
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
}

// "--zero 0,0" enumerated every layout twice (18,012 layouts, each row its own twin); a value
// given twice is one value, as --gpus and --cp treat it.
TEST(SweepListsTest, AValueGivenTwiceIsEnumeratedOnce) {
  const std::vector<std::pair<std::string, std::string>> lists = {{"--zero", "0"},
                                                                  {"--micro-batches", "2"}};
  for (const auto& [option, value] : lists) {
    test_util::RunResult once = test_util::RunTrainsim(
        {"sweep", kDemo, "--tokens", "300e9", "--top", "2", option, value, "--json"});
    test_util::RunResult twice = test_util::RunTrainsim(
        {"sweep", kDemo, "--tokens", "300e9", "--top", "2", option, value + "," + value, "--json"});
    ASSERT_EQ(once.exit_code, 0) << once.err;
    ASSERT_EQ(twice.exit_code, 0) << twice.err;
    EXPECT_EQ(once.out, twice.out) << option;
  }
}

}  // namespace
}  // namespace trainsim::cli
