// Runs the built `trainsim` binary: --help, --version, CLI errors, and `trainsim check` on good
// and bad scenarios (exit codes 0/2, messages on stderr, nothing on stdout for bad input).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace {

namespace fs = std::filesystem;
using trainsim::test_util::Contains;
using trainsim::test_util::RunResult;
using trainsim::test_util::RunTrainsim;

const fs::path kSource = TRAINSIM_SOURCE_DIR;
const std::string kDemo = (kSource / "scenarios/examples/demo.textproto").string();

TEST(CliTest, HelpListsTheCheckCommandAndExitsZero) {
  RunResult r = RunTrainsim({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "check")) << r.out;
  RunResult sub = RunTrainsim({"check", "--help"});
  EXPECT_EQ(sub.exit_code, 0);
  EXPECT_TRUE(Contains(sub.out, "--set")) << sub.out;
}

TEST(CliTest, VersionComesFromTheCmakeProjectVersion) {
  RunResult r = RunTrainsim({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("trainsim ") + TRAINSIM_VERSION + "\n");
}

TEST(CliTest, UsageErrorsExitTwoWithAMessageNotCli11Codes) {
  struct Case {
    std::vector<std::string> args;
    const char* fragment;
  } cases[] = {
      {{}, "a command is required (commands: check"},
      {{"frobnicate"}, "unknown command \"frobnicate\" (commands: check"},
      {{"--no-such-flag"}, "not expected: --no-such-flag"},
      {{"check"}, "SCENARIO is required"},
      {{"check", kDemo, "--bogus"}, "--bogus"},
      {{"check", kDemo, "--set"}, "--set"},
  };
  for (const Case& c : cases) {
    RunResult r = RunTrainsim(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.fragment << "\n" << r.err;
    EXPECT_TRUE(Contains(r.err, "trainsim: error: ")) << r.err;
    EXPECT_TRUE(Contains(r.err, c.fragment)) << c.fragment << "\n" << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(CliTest, CheckQuietPrintsTheSummaryWithoutTheResolvedScenario) {
  RunResult full = RunTrainsim({"check", kDemo});
  RunResult quiet = RunTrainsim({"check", kDemo, "--quiet"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_TRUE(Contains(full.out, "Resolved scenario"));
  EXPECT_FALSE(Contains(quiet.out, "Resolved scenario"));
  // The summary is the full report's beginning, unchanged, ending with its Cost section.
  EXPECT_EQ(full.out.rfind(quiet.out, 0), 0u);
  EXPECT_TRUE(Contains(quiet.out, "Cost\n"));
  // -q is the short form; --json is unaffected.
  EXPECT_EQ(RunTrainsim({"check", kDemo, "-q"}).out, quiet.out);
  EXPECT_EQ(RunTrainsim({"check", kDemo, "--json", "--quiet"}).out,
            RunTrainsim({"check", kDemo, "--json"}).out);
}

TEST(CliTest, CheckPrintsTheResolvedDemoWithDerivedValues) {
  RunResult r = RunTrainsim({"check", kDemo});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // 16 nodes x 8 GPUs; parameters by Narayanan's formula for GPT-3 175B (l 96, h 12288):
  // 12*96*12288^2*(1 + 13/(12*12288) + (51200+2048)/(12*96*12288)) = 174,615,822,336.
  for (const char* part :
       {"Scenario demo: valid", "128 x H100-SXM-80GB (16 nodes x 8, DGX-H100", "+ 2 spare nodes",
        "8 x NDR-400 per node", "2-level fat tree", "rail-optimised", "174.6 B (174,615,822,336)",
        "TP 8 x PP 8 x DP 2 = 128 GPUs, 12 layers per stage",
        "global 1,536 sequences = 3,145,728 tokens per step",
        "768 micro-batches per pipeline per step", "ASYNC, every 1h",
        // The label is the concept, not the C++ enum (a rename once leaked into it).
        "  Schedule        ", "per fault kind: process exit, NCCL error",
        "Resolved scenario (text format, defaults filled in):", "policy: RESTART_ON_SPARE",
        "bytes_per_param: 14"}) {
    EXPECT_TRUE(Contains(r.out, part)) << "missing: " << part << "\n" << r.out;
  }
  // 2.50 USD x (16 + 2 spare) nodes x 8 GPUs = 360 USD per hour.
  EXPECT_TRUE(Contains(r.out, "$2.50 per GPU-hour x 144 GPUs billed = $360.00 per hour")) << r.out;
}

TEST(CliTest, CheckJsonHasTheScenarioAndDerivedValues) {
  RunResult r = RunTrainsim({"check", "--json", kDemo});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["derived"]["num_gpus"], 128);
  EXPECT_EQ(j["derived"]["tokens_per_step"], 1536 * 2048);
  double l = 96, h = 12288, v = 51200, s = 2048;
  double params = 12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h));
  EXPECT_NEAR(j["derived"]["params"].get<double>(), params, 1.0);
  EXPECT_EQ(j["derived"]["total_steps"], nullptr);  // a duration goal
  EXPECT_DOUBLE_EQ(j["derived"]["training_duration_s"].get<double>(), 21 * 86400.0);
  EXPECT_EQ(j["scenario"]["parallelism"]["recompute"], "SELECTIVE");
  EXPECT_EQ(j["scenario"]["cluster"]["spare_nodes"], 2);
}

TEST(CliTest, SetOverridesApplyBeforeValidation) {
  RunResult r =
      RunTrainsim({"check", kDemo, "--set", "parallelism.tp=4", "--set", "parallelism.dp=4",
                   "--set", "parallelism.recompute=FULL", "--set", "model.layers=48"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "TP 4 x PP 8 x DP 4 = 128 GPUs, 6 layers per stage")) << r.out;
  EXPECT_TRUE(Contains(r.out, "recompute FULL")) << r.out;
  // --set before the positional argument works too.
  RunResult before =
      RunTrainsim({"check", "--set", "parallelism.pp=4", "--set", "parallelism.dp=4", kDemo});
  EXPECT_EQ(before.exit_code, 0) << before.err;
}

TEST(CliTest, BadOverridesExitTwoNamingThePath) {
  struct Case {
    const char* set;
    const char* fragment;
  } cases[] = {
      {"parallelism.tpp=4",
       "--set parallelism.tpp=4: unknown field \"tpp\" in parallelism; did "
       "you mean \"tp\"?"},
      {"parallelism.recompute=SOME", "(valid: NONE, SELECTIVE, FULL)"},
      {"parallelism.tp=8.5", "\"8.5\" is not a 32-bit integer"},
      {"parallelism.tp=4", "tp x pp x dp = 4 x 8 x 2 = 64 must equal the 128 GPUs"},
      {"cluster.gpu=H100-SXM-80G", "unknown GPU \"H100-SXM-80G\"; did you mean \"H100-SXM-80GB"},
      {"faults.0.kind=GPU", "faults[0].at: every fault needs a time"},
      {"model", "expected PATH=VALUE"},
  };
  for (const Case& c : cases) {
    RunResult r = RunTrainsim({"check", kDemo, "--set", c.set});
    EXPECT_EQ(r.exit_code, 2) << c.set;
    EXPECT_TRUE(Contains(r.err, c.fragment)) << c.set << "\n" << r.err;
    EXPECT_EQ(r.out, "") << "nothing on stdout for bad input";
  }
}

TEST(CliTest, EveryBadFileExitsTwoWithItsMessageAndWritesNothing) {
  fs::path bad = kSource / "tests/scenarios/bad";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(bad)) {
    if (e.path().extension() == ".textproto" || e.path().extension() == ".json") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 40u);
  for (const fs::path& f : files) {
    std::ifstream in(f.extension() == ".json" ? fs::path(f.string() + ".expect") : f);
    std::string expected;
    std::getline(in, expected);
    if (expected.rfind("# expect: ", 0) == 0) expected = expected.substr(10);
    // Run inside bad/ with a relative name so the message starts "NAME:LINE:COL".
    RunResult r = RunTrainsim({"check", f.filename().string()}, bad);
    EXPECT_EQ(r.exit_code, 2) << f.filename();
    EXPECT_EQ(r.out, "") << f.filename();
    EXPECT_TRUE(Contains(r.err, "trainsim: error: " + f.filename().string())) << r.err;
    EXPECT_TRUE(Contains(r.err, expected))
        << f.filename() << "\n  expected: " << expected << "\n  got: " << r.err;
  }
}

TEST(CliTest, MissingFileExitsTwo) {
  RunResult r = RunTrainsim({"check", "no/such/file.textproto"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "no/such/file.textproto: cannot open")) << r.err;
}

TEST(CliTest, OutputIsDeterministicAndIndependentOfTheWorkingDirectory) {
  RunResult a = RunTrainsim({"check", kDemo});
  RunResult b = RunTrainsim({"check", kDemo}, fs::temp_directory_path());  // catalogue is embedded
  ASSERT_EQ(a.exit_code, 0);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(CliTest, EveryBundledScenarioChecks) {
  for (const char* sub :
       {"scenarios/examples", "scenarios/validation", "scenarios/validation/checks"}) {
    for (const auto& e : fs::directory_iterator(kSource / sub)) {
      if (e.path().extension() != ".textproto" && e.path().extension() != ".json") continue;
      RunResult r = RunTrainsim({"check", e.path().string()});
      EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.err;
    }
  }
}

// `check` agrees with `run` on what it refuses: a layout over the GPU's memory exits 2 with
// run's message (check said "valid" and exited 0), unless --allow-oom; a TP group wider than a
// node is a scenario error at parallelism.tp's line and column (check said "valid").
TEST(CliTest, CheckRefusesWhatRunRefuses) {
  const std::string gb200 =
      (kSource / "scenarios/validation/bridge_gb200_llama3_70b_fp8.textproto").string();
  const std::string no_offload = "parallelism.cpu_offloading_num_layers=0";
  RunResult oom = RunTrainsim({"check", "-q", gb200, "--set", no_offload});
  EXPECT_EQ(oom.exit_code, 2);
  EXPECT_TRUE(Contains(oom.out, "valid file, but its layout does not fit in GPU memory"))
      << oom.out;
  EXPECT_TRUE(Contains(oom.err, "layout does not fit in GPU memory")) << oom.err;
  RunResult run = RunTrainsim({"run", gb200, "--set", no_offload});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, oom.err);
  RunResult allowed = RunTrainsim({"check", "-q", gb200, "--allow-oom", "--set", no_offload});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  // The JSON carries the verdict (the Python check() returns it without raising).
  RunResult json = RunTrainsim({"check", "--json", gb200, "--allow-oom", "--set", no_offload});
  EXPECT_TRUE(Contains(json.out, "\"fits_in_memory\": false")) << json.out;
  EXPECT_TRUE(Contains(RunTrainsim({"check", "--json", gb200}).out, "\"fits_in_memory\": true"));
  RunResult wide =
      RunTrainsim({"check", kDemo, "--set", "parallelism.tp=16", "--set", "parallelism.pp=4"});
  EXPECT_EQ(wide.exit_code, 2);
  EXPECT_TRUE(Contains(wide.err, "parallelism.tp: tp 16 exceeds the 8 GPUs of a node")) << wide.err;
}

}  // namespace
