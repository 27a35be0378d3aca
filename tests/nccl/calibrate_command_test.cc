// Tests for `trainsim calibrate`'s translation of a scenario into the runner's arguments
// (cli/calibrate_command.h). Kept with the runner's tests because they describe its inputs; no
// GPU needed.
#include "cli/calibrate_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace trainsim::cli {
namespace {

constexpr char kDemo[] = "scenarios/examples/demo.textproto";

scenarios::ResolvedScenario Demo(std::vector<std::string> sets = {}) {
  auto s = scenarios::LoadScenario(kDemo, sets);
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto r = scenarios::Resolve(*s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

std::string After(const std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
}

TEST(CalibrateCommandTest, DemoLayerShapesUnderTp8) {
  auto args = CalibrateRunnerArgs(Demo(), CalibrateOptions{}, "out.json");
  ASSERT_TRUE(args.ok()) << args.status().message();
  // GPT-3 175B, TP 8, micro-batch 1, seq 2048: qkv is 2048 tokens × 3·12288/8 × 12288, and the
  // attention products are batched over 96/8 = 12 heads with head size 128.
  const std::string gemm = After(*args, "--gemm");
  EXPECT_EQ(gemm.rfind("qkv=2048x4608x12288,proj=2048x12288x1536,", 0), 0u) << gemm;
  EXPECT_NE(gemm.find("attn.scores=2048x2048x128x12"), std::string::npos) << gemm;
  EXPECT_EQ(After(*args, "--dtypes"), "bf16");
  EXPECT_EQ(After(*args, "--expect-gpu"), "H100-SXM-80GB");
  EXPECT_EQ(After(*args, "-o"), "out.json");
  EXPECT_EQ(After(*args, "-f"), "");  // the full nccl-tests ladder unless --quick
}

TEST(CalibrateCommandTest, PrecisionChoosesTheGemmTypes) {
  auto fp8 = CalibrateRunnerArgs(Demo({"model.precision=FP8"}), CalibrateOptions{}, "o.json");
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  EXPECT_EQ(After(*fp8, "--dtypes"), "fp8,bf16");
  auto tf32 = CalibrateRunnerArgs(Demo({"model.precision=TF32"}), CalibrateOptions{}, "o.json");
  ASSERT_FALSE(tf32.ok());
  EXPECT_NE(tf32.status().message().find("TF32"), std::string::npos);
}

TEST(CalibrateCommandTest, QuickAndNranksAreForwarded) {
  CalibrateOptions o;
  o.quick = true;
  o.nranks = "2,4,8";
  auto args = CalibrateRunnerArgs(Demo(), o, "o.json");
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(After(*args, "-f"), "8");
  EXPECT_EQ(After(*args, "-e"), "1G");
  EXPECT_EQ(After(*args, "--nranks"), "2,4,8");
}

TEST(CalibrateCommandTest, DefaultOutputIsNamedAfterTheScenario) {
  EXPECT_EQ(DefaultCalibrationPath("scenarios/examples/demo.textproto"), "demo.calibration.json");
  EXPECT_EQ(DefaultCalibrationPath("gpt.json"), "gpt.calibration.json");
}

}  // namespace
}  // namespace trainsim::cli
