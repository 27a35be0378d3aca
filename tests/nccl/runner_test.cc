// Tests for the calibration runner's CPU side (comm/nccl/runner_options.h, report.h): argument
// parsing and its errors, the size ladder, and that the JSON it writes is what
// comm::LoadCalibration reads back. The GPU side is in gpu_runner_test.cc (skips without a GPU).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "comm/calibration.h"
#include "comm/nccl/report.h"
#include "comm/nccl/runner_options.h"

namespace trainsim::comm::nccl {
namespace {

Result<RunnerOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "trainsim-nccl-calibrate");
  return ParseRunnerArgs(static_cast<int>(args.size()), args.data());
}

TEST(RunnerOptionsTest, DefaultsAreNcclTestsSweep) {
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().message();
  // nccl-tests' -b 8 -e 1G -f 2: 8·2^i for i = 0..27, 28 sizes.
  std::vector<int64_t> sizes = SizeLadder(*o);
  ASSERT_EQ(sizes.size(), 28u);
  EXPECT_EQ(sizes.front(), 8);
  EXPECT_EQ(sizes.back(), int64_t{1} << 30);
  EXPECT_EQ(o->ops.size(), 5u);
  EXPECT_EQ(o->algos, (std::vector<std::string>{"ring", "tree"}));
}

TEST(RunnerOptionsTest, ParsesSizesShapesAndLists) {
  auto o = Parse({"-b", "1K", "--max-bytes=64M", "-f", "4", "--gemm",
                  "qkv=2048x4608x12288,2048x2048x128x12", "--dtypes", "bf16", "--nranks", "2,4",
                  "-o", "/tmp/x.json", "--ops", "all_reduce,send_recv", "--timeout-s", "5"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->min_bytes, 1024);
  EXPECT_EQ(o->max_bytes, int64_t{64} << 20);
  // 1K·4^i up to 64M: 1K, 4K, 16K, 64K, 256K, 1M, 4M, 16M, 64M.
  EXPECT_EQ(SizeLadder(*o).size(), 9u);
  ASSERT_EQ(o->gemms.size(), 2u);
  EXPECT_EQ(o->gemms[0].name, "qkv");
  EXPECT_EQ(o->gemms[0].n, 4608);
  EXPECT_EQ(o->gemms[1].batch, 12);
  EXPECT_EQ(o->nranks, (std::vector<int>{2, 4}));
  EXPECT_EQ(o->ops, (std::vector<std::string>{"all_reduce", "send_recv"}));
  EXPECT_EQ(o->timeout_s, 5);
}

TEST(RunnerOptionsTest, BadInputNamesTheOption) {
  struct Case {
    std::vector<const char*> args;
    std::string message;
  };
  const Case cases[] = {
      {{"-e", "16G"}, "-e: \"16G\" is beyond the largest size, 8G"},
      {{"-b", "lots"}, "-b: \"lots\" is not a size"},
      {{"-b", "2G", "-e", "1G"}, "--min-bytes (2147483648) is larger than --max-bytes"},
      {{"--gemm", "12x34"}, "--gemm: \"12x34\" is not a GEMM shape"},
      {{"--gemm", "0x1x1"}, "is not a GEMM shape"},
      {{"--ops", "alltoall"}, "--ops: unknown value \"alltoall\""},
      {{"--algos", "nvls"}, "--algos: unknown value \"nvls\" (valid: ring, tree)"},
      {{"--dtypes", "fp4"}, "--dtypes: unknown value \"fp4\""},
      {{"--repeats", "0"}, "--repeats: \"0\" is not valid"},
      {{"--timeout-s", "-1"}, "--timeout-s: \"-1\" is not valid"},
      {{"--nranks"}, "--nranks: missing value"},
      {{"--frobnicate"}, "unknown argument \"--frobnicate\""},
  };
  for (const Case& c : cases) {
    auto o = Parse(c.args);
    ASSERT_FALSE(o.ok()) << c.message;
    EXPECT_NE(o.status().message().find(c.message), std::string::npos)
        << "got: " << o.status().message();
  }
}

TEST(RunnerOptionsTest, ItersShrinkWithSize) {
  RunnerOptions o;
  EXPECT_EQ(ItersFor(o, 8), 20);
  EXPECT_EQ(ItersFor(o, int64_t{1} << 20), 20);
  EXPECT_EQ(ItersFor(o, int64_t{64} << 20), 5);
  EXPECT_EQ(ItersFor(o, int64_t{1} << 30), 1);
  o.iters = 3;
  EXPECT_EQ(ItersFor(o, 8), 3);
}

TEST(RunnerOptionsTest, GpuNamesMatchByModelWord) {
  EXPECT_TRUE(GpuNameMatches("NVIDIA H100 80GB HBM3", "H100-SXM-80GB"));
  EXPECT_TRUE(GpuNameMatches("NVIDIA H200", "h200"));
  EXPECT_FALSE(GpuNameMatches("NVIDIA H200", "H100-SXM-80GB"));
  EXPECT_FALSE(GpuNameMatches("NVIDIA A100-SXM4-80GB", "H100"));
}

TEST(ReportTest, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(BusBwFactor("all_reduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor("reduce_scatter", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor("all_gather", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBwFactor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor("send_recv", 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor("all_reduce", 1), 0.0);  // nothing crosses a link
}

TEST(ReportTest, JsonStringsAreEscaped) {
  EXPECT_EQ(JsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

Report SampleReport() {
  Report r;
  r.gpu_name = "NVIDIA H200";
  r.gpu_count = 1;
  r.compute_capability = "9.0";
  r.nccl_version = "2.28.9";
  r.cuda_version = "13.0";
  r.driver_version = "13.0";
  r.date = "2026-11-30T10:00:00Z";
  r.note = "a \"quoted\" note";
  // One rank: the all-reduce is a local copy; times are made up for the round trip.
  r.collectives.push_back({"all_reduce", "ring", 1, 1, 1024, 256, 4.0e-6, 0.256, 0.0, true});
  r.collectives.push_back({"all_reduce", "ring", 1, 1, 4096, 1024, 8.0e-6, 0.512, 0.0, true});
  r.collectives.push_back({"send_recv", "direct", 1, 1, 1024, 256, 5.0e-6, 0.2048, 0.2048, true});
  r.gemms.push_back({"qkv", "bf16", 2048, 4608, 12288, 1, 4.0e-4, 579.8, true});
  return r;
}

TEST(ReportTest, WrittenJsonLoadsBackExactly) {
  std::ostringstream json;
  WriteJson(SampleReport(), json);
  auto c = ParseCalibration(json.str(), "runner.json");
  ASSERT_TRUE(c.ok()) << c.status().message() << "\n" << json.str();
  EXPECT_FALSE(c->is_sample());
  EXPECT_EQ(c->gpu_name(), "NVIDIA H200");
  EXPECT_EQ(c->nccl_version(), "2.28.9");
  ASSERT_EQ(c->collectives().size(), 3u);
  EXPECT_EQ(c->collectives()[1].time_s, 8.0e-6);  // %.17g round-trips exactly
  // Between the two all-reduce rows: 2048 B is half-way in log size, so sqrt(4 us · 8 us).
  auto t = c->CollectiveTime("all_reduce", "ring", 1, 2048);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->nanos(), 5657);  // 5.65685 us
  auto g = c->GemmTflops("bf16", 2048, 4608, 12288);
  ASSERT_TRUE(g.has_value());
  EXPECT_DOUBLE_EQ(*g, 579.8);
}

TEST(ReportTest, EmptyTablesStillFormValidJson) {
  Report r = SampleReport();
  r.collectives.clear();
  std::ostringstream json;
  WriteJson(r, json);
  auto c = ParseCalibration(json.str(), "runner.json");
  ASSERT_TRUE(c.ok()) << c.status().message() << "\n" << json.str();
  EXPECT_TRUE(c->collectives().empty());
  EXPECT_EQ(c->gemms().size(), 1u);
}

TEST(ReportTest, TableRowsLineUpWithTheHeader) {
  std::ostringstream out;
  PrintCollectiveHeader(out);
  PrintCollectiveRow(SampleReport().collectives[0], out);
  std::string text = out.str();
  EXPECT_NE(text.find("busbw(GB/s)"), std::string::npos);
  EXPECT_NE(text.find("all_reduce      ring       1            1024"), std::string::npos) << text;
  EXPECT_NE(text.find("  OK\n"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::comm::nccl
