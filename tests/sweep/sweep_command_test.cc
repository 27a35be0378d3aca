// `trainsim sweep`, run as users run it: JSON keys, CSV of every layout, bad input (exit 2 with
// one clear message), and the MPI run (`mpirun --oversubscribe -np 2`) byte-identical to the
// single process; that one skips when mpirun is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace {

namespace fs = std::filesystem;

const fs::path kSource = TRAINSIM_SOURCE_DIR;
// A 1.3B GPT on one DGX A100 (8 GPUs), 26B tokens: a sweep of a few hundred layouts.
const std::string kSmall = (kSource / "scenarios/examples/small.json").string();
const std::string kDemo = (kSource / "scenarios/examples/demo.textproto").string();

using trainsim::test_util::Contains;
using trainsim::test_util::RunProgram;
using trainsim::test_util::RunResult;

// Runs `prefix` (e.g. mpirun ...) + trainsim + args from the source tree; stdout and stderr
// captured. Sweeps under mpirun on a loaded 2-core machine can take minutes, hence the limit.
RunResult RunCommand(const std::vector<std::string>& prefix, const std::vector<std::string>& args) {
  std::vector<std::string> argv = prefix;
  argv.push_back(TRAINSIM_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  trainsim::test_util::RunLimits limits;
  limits.timeout_s = 900;
  return RunProgram(argv, kSource.string(), limits);
}

TEST(SweepCommandTest, JsonHasTheIssuesKeys) {
  RunResult r = RunCommand({}, {"sweep", kSmall, "--top", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* k : {"top", "pareto", "evaluated", "rejected"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  ASSERT_EQ(j["top"].size(), 3u);
  for (const char* k : {"tp",
                        "pp",
                        "dp",
                        "micro_batch",
                        "virtual_stages",
                        "recompute",
                        "sequence_parallel",
                        "zero_stage",
                        "step_time_s",
                        "mfu",
                        "memory_bytes_per_gpu",
                        "expected_ettr",
                        "time_to_train_s",
                        "cost_usd",
                        "cp",
                        "ep",
                        "etp",
                        "first_stage_layers",
                        "last_stage_layers",
                        "shard_group"}) {
    EXPECT_TRUE(j["top"][0].contains(k)) << k;
  }
  EXPECT_GT(j["evaluated"].get<int>(), 0);
  // Ranked by time to train, fastest first.
  EXPECT_LE(j["top"][0]["time_to_train_s"].get<double>(),
            j["top"][1]["time_to_train_s"].get<double>());
  EXPECT_TRUE(r.err.empty()) << "no progress bar outside a terminal: " << r.err;
}

// At the largest token budget (2^60) the days, GPU-hours and cost take more digits than their
// columns hold; they once ran together into one field. Every row must split into as many
// whitespace-separated fields as a row of ordinary numbers, and the sweep's GPU counts are
// listed once each.
// A fine-grained MoE model's sweep carries the validation's warning in its context (text and
// --json), as `run` does; a dense model's does not.
TEST(SweepCommandTest, FineGrainedMoeSweepSaysItsStepTimesAreOptimistic) {
  const std::string qwen =
      (kSource / "scenarios/validation/bridge_h100_qwen3_30b_a3b_fp8.textproto").string();
  RunResult text = RunCommand({}, {"sweep", qwen, "--top", "1", "--tokens", "1e11"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Contains(text.out, "fidelity: fine-grained MoE (128 experts)")) << text.out;
  RunResult js = RunCommand({}, {"sweep", qwen, "--top", "1", "--tokens", "1e11", "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  EXPECT_TRUE(nlohmann::json::parse(js.out)["context"].contains("fidelity"));
  RunResult dense = RunCommand({}, {"sweep", kSmall, "--top", "1", "--json"});
  ASSERT_EQ(dense.exit_code, 0) << dense.err;
  EXPECT_FALSE(nlohmann::json::parse(dense.out)["context"].contains("fidelity"));
}

TEST(SweepCommandTest, HugeValuesKeepTheirColumnsApart) {
  const RunResult big = RunCommand(
      {}, {"sweep", kSmall, "--tokens", "1152921504606846976", "--top", "1", "--gpus", "8,8"});
  const RunResult usual = RunCommand({}, {"sweep", kSmall, "--top", "1"});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  ASSERT_EQ(usual.exit_code, 0) << usual.err;
  const auto first_row = [](const std::string& out) {
    std::istringstream in(out.substr(out.find("\n  1 ")));
    std::string line;
    std::getline(in, line);  // the empty rest of the line before the row
    std::getline(in, line);
    std::istringstream fields(line);
    std::vector<std::string> v;
    for (std::string f; fields >> f;) v.push_back(f);
    return v;
  };
  EXPECT_EQ(first_row(big.out).size(), first_row(usual.out).size()) << big.out;
  EXPECT_FALSE(Contains(big.out, "8, 8")) << big.out.substr(0, 200);
}

TEST(SweepCommandTest, CsvHoldsEveryEvaluatedAndRejectedLayout) {
  const fs::path csv =
      fs::temp_directory_path() / ("trainsim_sweep_test_" + std::to_string(::getpid()) + ".csv");
  RunResult r = RunCommand({}, {"sweep", kSmall, "--top", "2", "--json", "--csv", csv.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("index,gpus,tp,pp,dp,micro_batch,", 0), 0u) << line;
  EXPECT_TRUE(Contains(line, ",cp,ep,etp,first_stage_layers,last_stage_layers,shard_group,"))
      << line;
  int evaluated = 0, rejected = 0;
  while (std::getline(in, line)) {
    if (Contains(line, ",evaluated,")) ++evaluated;
    if (Contains(line, ",rejected,")) ++rejected;
  }
  EXPECT_EQ(evaluated, j["evaluated"].get<int>());
  EXPECT_EQ(rejected, j["rejected"].get<int>());
  EXPECT_GT(rejected, 0);
  fs::remove(csv);
}

// The new dimensions restricted from the command line: only the listed CP degrees and ZeRO
// stages appear, and the text table has their columns.
TEST(SweepCommandTest, CpAndZeroListsRestrictTheSweep) {
  RunResult r = RunCommand({}, {"sweep", kSmall, "--top", "3", "--json", "--cp", "1", "--zero", "1",
                                "--no-uneven", "--no-overlaps"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& row : j["top"]) {
    EXPECT_EQ(row["cp"].get<int>(), 1);
    EXPECT_EQ(row["zero_stage"].get<int>(), 1);
    EXPECT_EQ(row["first_stage_layers"].get<int>(), -1);
  }
  RunResult t = RunCommand({}, {"sweep", kSmall, "--top", "1", "--zero", "1"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* col : {" CP ", " EP ", "ETP", "1st/last", "ZeRO/sh"}) {
    EXPECT_TRUE(Contains(t.out, col)) << col << "\n" << t.out;
  }
}

// A replica of a CP layout is tp × cp × pp GPUs; the Monte Carlo trials of a confirmed layout
// counted tp × pp × dp only and refused every layout with CP > 1 (a bug a new user found).
TEST(SweepCommandTest, MonteCarloTrialsRunOnContextParallelLayouts) {
  RunResult r =
      RunCommand({}, {"sweep", kSmall, "--top", "2", "--json", "--cp", "2", "--trials", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["top"].empty());
  for (const auto& row : j["top"]) {
    EXPECT_EQ(row["cp"].get<int>(), 2);
    ASSERT_TRUE(row.contains("mc_ettr")) << row.dump();
    const double ettr = row["mc_ettr"].get<double>();
    EXPECT_GT(ettr, 0.0);
    EXPECT_LE(ettr, 1.0);
  }
}

TEST(SweepCommandTest, BadInputExitsTwoWithOneMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"sweep", kSmall, "--objective", "fastest"}, "unknown objective 'fastest'"},
      {{"sweep", kSmall, "--gpus", "12"}, "multiple of 8"},
      // An empty list once read as "--gpus 0".
      {{"sweep", kSmall, "--gpus", ""}, "--gpus: a GPU count is a positive multiple"},
      {{"sweep", kSmall, "--top", "0"}, "--top"},
      {{"sweep", kSmall, "--zero", "4"}, "--zero"},
      {{"sweep", kSmall, "--cp", "0"}, "--cp"},
      {{"sweep", kSmall, "--ep", "2"}, "mixture-of-experts"},
      {{"sweep", kSmall, "--pareto", "time,time"}, "not two different objectives"},
      {{"sweep", kSmall, "--memory-headroom", "1.5"},
       "cluster.memory_headroom: '1.5': use a fraction"},
      {{"sweep", kSmall, "--threads", "-1"}, "--threads"},
      {{"sweep", kSmall, "--gpu", "H100,h100-sxm-80gb"}, "twice"},
      {{"sweep", kSmall, "--gpu", "Z900"}, "Z900"},
      // training.duration gives no token budget.
      {{"sweep", kDemo}, "--tokens"},
      // GPT-3 175B on one DGX H100: nothing fits.
      {{"sweep", kDemo, "--tokens", "300e9", "--gpus", "8"}, "smallest shortfall"},
  };
  for (const Case& c : cases) {
    RunResult r = RunCommand({}, c.args);
    EXPECT_EQ(r.exit_code, 2) << c.expected << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_TRUE(Contains(r.err, "trainsim: error: ")) << r.err;
    EXPECT_TRUE(Contains(r.err, c.expected)) << r.err;
  }
}

// Issue 16: --gpu sweeps GPU types, each on its node with its catalogue board power, ranked
// together by energy; the JSON carries its context; every row fits within the headroom.
TEST(SweepCommandTest, GpuTypesRankedByEnergyDrawTheirPowerFromTheCatalogue) {
  RunResult r = RunCommand({}, {"sweep", kSmall, "--top", "4", "--json", "--gpu", "a100,H100",
                                "--objective", "energy", "--memory-headroom", "10%"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& ctx = j["context"];
  ASSERT_EQ(ctx["hardware"].size(), 2u);
  std::map<std::string, double> tdp, usable;
  for (const auto& h : ctx["hardware"]) {
    tdp[h["gpu"]] = h["tdp_watts"].get<double>();
    usable[h["gpu"]] = h["hbm_bytes"].get<double>() - h["memory_headroom_bytes"].get<double>();
    EXPECT_DOUBLE_EQ(h["memory_headroom_bytes"].get<double>(), 0.1 * h["hbm_bytes"].get<double>());
  }
  // The catalogue's board power: A100 SXM 400 W, H100 SXM 700 W (NVIDIA datasheets).
  EXPECT_EQ(tdp.at("A100-SXM-80GB"), 400);
  EXPECT_EQ(tdp.at("H100-SXM-80GB"), 700);
  EXPECT_EQ(ctx["objective"], "energy");
  for (const char* k : {"scenario", "model", "gpu_counts", "token_budget", "usd_per_gpu_hour",
                        "usd_per_kwh", "pue", "confirm_rounds"}) {
    EXPECT_TRUE(ctx.contains(k)) << k;
  }
  double last = 0;
  for (const auto& row : j["top"]) {
    EXPECT_TRUE(row["confirmed"].get<bool>());
    EXPECT_GE(row["energy_kwh"].get<double>(), last);
    last = row["energy_kwh"].get<double>();
    const double w = tdp.at(row["gpu"].get<std::string>());
    EXPECT_NEAR(row["gpu_watts"].get<double>(),
                w * (0.3 + 0.7 * row["busy_fraction"].get<double>()), 1e-9 * w);
    EXPECT_LE(row["memory_bytes_per_gpu"].get<double>(), usable.at(row["gpu"].get<std::string>()));
  }
}

TEST(SweepCommandTest, ThreeThreadsPrintExactlyWhatOneThreadPrints) {
  // The ranking's estimates and the confirmations both run on --threads; the text and the JSON
  // (every number of every printed row, with the CSV's per-layout estimates) do not change.
  for (const std::vector<std::string>& extra :
       std::vector<std::vector<std::string>>{{}, {"--json"}}) {
    std::vector<std::string> args = {"sweep", kSmall, "--top", "4"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<std::string> one_args = args, three_args = args;
    one_args.insert(one_args.end(), {"--threads", "1"});
    three_args.insert(three_args.end(), {"--threads", "3"});
    RunResult one = RunCommand({}, one_args);
    RunResult three = RunCommand({}, three_args);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    ASSERT_EQ(three.exit_code, 0) << three.err;
    EXPECT_EQ(three.out, one.out);
  }
}

TEST(SweepCommandTest, TwoMpiRanksPrintExactlyWhatOneProcessPrints) {
  const std::string mpiexec = TRAINSIM_MPIEXEC;
  if (mpiexec.empty() || ::access(mpiexec.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "mpirun not found; the sweep runs as one process without it";
  }
  // Open MPI refuses to run as root without these; harmless otherwise.
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const std::vector<std::string> args = {"sweep", kSmall, "--top", "4"};
  RunResult one = RunCommand({}, args);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  RunResult two = RunCommand({mpiexec, "--oversubscribe", "-np", "2"}, args);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  RunResult one_json = RunCommand({}, json_args);
  RunResult two_json = RunCommand({mpiexec, "--oversubscribe", "-np", "2"}, json_args);
  ASSERT_EQ(two_json.exit_code, 0) << two_json.err;
  EXPECT_EQ(two_json.out, one_json.out);
  // Monte Carlo trials are split over the ranks the same way.
  json_args.insert(json_args.end(), {"--trials", "16"});
  RunResult one_mc = RunCommand({}, json_args);
  RunResult two_mc = RunCommand({mpiexec, "--oversubscribe", "-np", "2"}, json_args);
  ASSERT_EQ(two_mc.exit_code, 0) << two_mc.err;
  EXPECT_TRUE(Contains(one_mc.out, "\"mc_ettr\"")) << one_mc.out;
  EXPECT_EQ(two_mc.out, one_mc.out);
}

}  // namespace
