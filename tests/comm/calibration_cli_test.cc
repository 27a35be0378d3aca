// A calibration file through the `trainsim` binary (measured numbers replace the model where they
// cover the call, and the reports say which): `trainsim collective` takes covered rows from the
// sample file (interpolated log-log, checked by hand here) and marks the rest modelled;
// `trainsim run` says what of the step came from the file; a missing, unparsable or wrong-GPU file
// is one message and exit 2.
#include <gtest/gtest.h>
#include <unistd.h>

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
const std::string kSample = (kSource / "scenarios/calibration/dgx_h100_sample.json").string();

TEST(CalibrationCliTest, CollectiveInsideCoverageIsTheHandInterpolatedTime) {
  // 8-rank ring all-reduce in one node at 48 MiB lies between the sample's 16 MiB (137.4 µs)
  // and 128 MiB (768.6 µs) rows; a power law through them gives
  // 137.4 · (768.6/137.4)^(ln 3 / ln 8) µs.
  RunResult r = RunTrainsim({"collective", kDemo, "--group", "8", "--algo", "ring", "--sizes",
                             "48MiB", "--calibration", kSample, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  const double expected = 137.4e-6 * std::pow(768.6 / 137.4, std::log(3.0) / std::log(8.0));
  EXPECT_NEAR(j[0]["time_s"].get<double>(), expected, 1e-9);  // the simulator's ns resolution
  EXPECT_EQ(j[0]["source"], "calibration");
  EXPECT_EQ(j[0]["protocol"], "nccl");
  EXPECT_EQ(j[0]["calibration"]["sample"], true);
  EXPECT_EQ(j[0]["calibration"]["gpu"], "NVIDIA H100 80GB HBM3");
}

TEST(CalibrationCliTest, ScenarioClusterCalibrationIsUsedWithoutTheFlag) {
  // cluster.calibration is relative to the scenario file's directory (scenarios/examples/).
  RunResult r =
      RunTrainsim({"collective", kDemo, "--group", "8", "--algo", "ring", "--sizes", "16MiB",
                   "--set", "cluster.calibration=../calibration/dgx_h100_sample.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j[0]["source"], "calibration");
  EXPECT_NEAR(j[0]["time_s"].get<double>(), 137.4e-6, 1e-9);  // the sample's 16 MiB row
}

TEST(CalibrationCliTest, CollectiveAtAMeasuredSizeIsExactlyTheMeasurement) {
  RunResult r = RunTrainsim({"collective", kDemo, "--group", "8", "--algo", "tree", "--sizes",
                             "2MiB", "--calibration", kSample, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j[0]["time_s"].get<double>(), 4.065e-05, 1e-9);
}

TEST(CalibrationCliTest, RowsOutsideCoverageAreModelledAndMarked) {
  // 2 GiB is above the largest measured size (1 GiB); 16 GPUs over 2 nodes has no curve; the
  // sample has no all_to_all. Each falls back to the model and says so.
  const std::vector<std::vector<std::string>> cases = {
      {"--group", "8", "--algo", "ring", "--sizes", "2GiB"},
      {"--group", "16", "--algo", "ring", "--sizes", "48MiB"},
      {"--op", "all_to_all", "--group", "8", "--sizes", "48MiB"},
  };
  for (const auto& extra : cases) {
    std::vector<std::string> args = {"collective", kDemo, "--calibration", kSample, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = RunTrainsim(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j[0]["source"], "model") << extra[1];
    EXPECT_NE(j[0]["protocol"], "nccl") << extra[1];
  }
}

TEST(CalibrationCliTest, TableNamesTheFileAndMarksEachRow) {
  RunResult r = RunTrainsim({"collective", kDemo, "--group", "8", "--algo", "ring", "--sizes",
                             "512MiB:2GiB", "--calibration", kSample});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "SAMPLE calibration")) << r.out;
  EXPECT_TRUE(Contains(r.out, "NVIDIA H100 80GB HBM3")) << r.out;
  EXPECT_TRUE(Contains(r.out, "NCCL 2.30")) << r.out;
  EXPECT_TRUE(Contains(r.out, "2 of 3 rows calibrated")) << r.out;
  EXPECT_TRUE(Contains(r.out, "calib\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "model\n")) << r.out;
  // Without a calibration the table is the model's, with no source column.
  RunResult plain = RunTrainsim({"collective", kDemo, "--group", "8", "--sizes", "1GiB"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_FALSE(Contains(plain.out, "source")) << plain.out;
}

// Regression: the model-only table once printed the protocol under the "algo" heading and no
// algorithm at all. A 1 GiB all-reduce in one NVSwitch node is a ring with the Simple protocol
// (the tree's 0.92 bandwidth cap and LL/LL128's caps all lose at that size;
// docs/evidence/references.md, "NCCL's cost model").
TEST(CalibrationCliTest, ModelTableNamesTheAlgorithmAndTheProtocol) {
  RunResult r = RunTrainsim({"collective", kDemo, "--group", "8", "--sizes", "1GiB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A 1 GiB all-reduce inside one DGX H100: NCCL's tuner picks NVLS (NVLink SHARP).
  EXPECT_TRUE(Contains(r.out, "  nvls          Simple\n")) << r.out;
}

TEST(CalibrationCliTest, BadCalibrationFilesExitTwoWithOneMessage) {
  const fs::path bad =
      fs::temp_directory_path() / ("trainsim_calib_bad_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(bad);
    out << "{\"format\": \"trainsim-calibration\",\n  \"version\": 1,\n  oops\n}\n";
  }
  struct Case {
    std::vector<std::string> args;
    const char* fragment;
  } cases[] = {
      // An H100 file for an A100 cluster.
      {{"--calibration", kSample, "--set", "cluster.gpu=A100-SXM-80GB"}, "A100"},
      {{"--calibration", bad.string()}, ":3:"},  // path:line:column of the syntax error
      {{"--calibration", "/nonexistent/calibration.json"}, "/nonexistent/calibration.json"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"collective", kDemo, "--group", "8", "--sizes", "1MiB"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult r = RunTrainsim(args);
    EXPECT_EQ(r.exit_code, 2) << c.fragment << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(r.err.rfind("trainsim: error: ", 0), 0u) << r.err;
    EXPECT_TRUE(Contains(r.err, c.fragment)) << r.err;
  }
  fs::remove(bad);
}

TEST(CalibrationCliTest, RunSaysWhatCameFromTheCalibration) {
  RunResult plain = RunTrainsim({"run", kDemo, "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  RunResult r = RunTrainsim({"run", kDemo, "--calibration", kSample, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json a = nlohmann::json::parse(plain.out);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(a["step"].contains("calibration"));
  const nlohmann::json& c = j["step"]["calibration"];
  EXPECT_EQ(c["sample"], true);
  EXPECT_EQ(c["gpu"], "NVIDIA H100 80GB HBM3");
  // GPT-3 175B at TP 8, micro-batch 1: the sample was written for exactly the layer's shapes
  // (4 forward, 2 new dgrad, 4 wgrad products); the head's logits (2048 × 51200/8 × 12288, its
  // dgrad and wgrad) lie within 2× of its rows in every dimension.
  EXPECT_EQ(c["gemm_shapes"], 13);
  EXPECT_EQ(c["gemm_shapes_calibrated"], 13);
  EXPECT_EQ(c["collectives_calibrated"][0], "all_gather 8 ranks");
  EXPECT_TRUE(c["collectives_modelled"].empty());
  EXPECT_NE(j["step"]["time_s"], a["step"]["time_s"]);

  RunResult text = RunTrainsim({"run", kDemo, "--calibration", kSample});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(
      Contains(text.out, "calibrated          GEMM efficiency for 13/13 matrix-product shapes"))
      << text.out;
  EXPECT_TRUE(Contains(text.out, "SAMPLE: not measured")) << text.out;
  EXPECT_TRUE(Contains(text.out, "modelled            DP/PP/ZeRO flows")) << text.out;
}

TEST(CalibrationCliTest, RunRejectsACalibrationOfAnotherGpu) {
  RunResult r =
      RunTrainsim({"run", kDemo, "--calibration", kSample, "--set", "cluster.gpu=A100-SXM-80GB"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(Contains(r.err, "A100-SXM-80GB")) << r.err;
  RunResult missing = RunTrainsim({"run", kDemo, "--calibration", "/nonexistent/c.json"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_TRUE(missing.out.empty()) << missing.out;
}

}  // namespace
