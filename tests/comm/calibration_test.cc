// Tests for comm/calibration.h: the loader's errors, the interpolation rules (checked against
// values computed by hand from the sample file's rows), GPU matching and the per-layer shapes.
#include "comm/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace trainsim::comm {
namespace {

constexpr char kSample[] = "scenarios/calibration/dgx_h100_sample.json";

Calibration LoadSample() {
  auto c = LoadCalibration(kSample);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

// A minimal valid file with one collective row and one GEMM row; `row` replaces the collective.
std::string File(const std::string& row,
                 const std::string& gemm = R"({"dtype": "bf16", "m": 8, "n": 8, "k": 8,
                                               "tflops": 1.5})") {
  return R"({"gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "nccl_version": "2.28.9",
             "cuda_version": "13.0", "date": "2026-11-30",
             "collectives": [)" +
         row + R"(], "gemm": [)" + gemm + "]}";
}
const std::string kRow =
    R"({"op": "all_reduce", "algo": "ring", "nranks": 8, "size_bytes": 1024, "time_s": 1e-5,
        "busbw_GBps": 0.18})";

std::string ErrorOf(const std::string& text) {
  auto c = ParseCalibration(text, "f.json");
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.status().message();
}

TEST(CalibrationTest, LoadsTheCheckedInSampleAndSaysItIsASample) {
  Calibration c = LoadSample();
  EXPECT_TRUE(c.is_sample());
  EXPECT_EQ(c.gpu_name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(c.gpu_count(), 8);
  // 7 curves (ring/tree all-reduce on 8, ring all-reduce on 4, reduce-scatter, all-gather,
  // broadcast, send/recv) × 10 sizes (8 B × 8^i up to 1 GiB); 12 BF16 shapes + 10 FP8 linear ones.
  EXPECT_EQ(c.collectives().size(), 70u);
  EXPECT_EQ(c.gemms().size(), 22u);
}

TEST(CalibrationTest, MeasuredSizeGivesTheMeasuredTime) {
  Calibration c = LoadSample();
  // Row: all_reduce ring 8 ranks, 1 GiB, 0.005757 s.
  auto t = c.CollectiveTime("all_reduce", "ring", 8, int64_t{1} << 30);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->nanos(), 5757000);
}

TEST(CalibrationTest, InterpolatesLogLogBetweenTheBracketingSizes) {
  Calibration c = LoadSample();
  // Rows at 16 MiB (137.4 us) and 128 MiB (768.6 us); 32 MiB is a third of the way in log size,
  // so t = 137.4 us × (768.6 / 137.4)^(1/3) = 137.4 × 1.7752 ≈ 243.9 us.
  auto t = c.CollectiveTime("all_reduce", "ring", 8, int64_t{32} << 20);
  ASSERT_TRUE(t.has_value());
  EXPECT_NEAR(t->seconds(), 243.9e-6, 0.1e-6);
  // A power law between points: in the bandwidth-bound end time is nearly linear in size, so
  // half-way in log size (≈ 362 MiB between 128 MiB and 1 GiB) the time is the geometric mean
  // sqrt(0.7686 ms × 5.757 ms) = 2.1035 ms.
  int64_t geo = static_cast<int64_t>(std::llround(std::sqrt(134217728.0 * 1073741824.0)));
  auto mid = c.CollectiveTime("all_reduce", "ring", 8, geo);
  ASSERT_TRUE(mid.has_value());
  EXPECT_NEAR(mid->seconds(), 2.1035e-3, 0.0005e-3);
}

TEST(CalibrationTest, SimulatorEnumsMapToTheFileNames) {
  Calibration c = LoadSample();
  auto t = c.CollectiveTime(Op::kAllReduce, Algo::kRing, 8, int64_t{1} << 30);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->nanos(), 5757000);
  // send/recv's row at 1 GiB: 3.27 ms.
  auto p2p = c.CollectiveTime(Op::kSendRecv, Algo::kDirect, 8, int64_t{1} << 30);
  ASSERT_TRUE(p2p.has_value());
  EXPECT_EQ(p2p->nanos(), 3270000);
  EXPECT_FALSE(c.CollectiveTime(Op::kAllReduce, Algo::kAuto, 8, 1024).has_value());
  EXPECT_FALSE(c.CollectiveTime(Op::kAllReduce, Algo::kHierarchical, 8, 1024).has_value());
}

TEST(CalibrationTest, LatencyBoundEndStaysFlat) {
  Calibration c = LoadSample();
  // 8 B and 64 B were both measured at 15.0 us: anything between is 15.0 us.
  auto t = c.CollectiveTime("all_reduce", "ring", 8, 20);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->nanos(), 15000);
}

TEST(CalibrationTest, OutsideCoverageIsNullopt) {
  Calibration c = LoadSample();
  EXPECT_FALSE(c.CollectiveTime("all_reduce", "ring", 8, 4).has_value());                 // < 8 B
  EXPECT_FALSE(c.CollectiveTime("all_reduce", "ring", 8, int64_t{2} << 30).has_value());  // 2 GiB
  EXPECT_FALSE(c.CollectiveTime("all_reduce", "ring", 2, 1024).has_value());  // no 2-rank curve
  EXPECT_FALSE(c.CollectiveTime("reduce_scatter", "tree", 8, 1024).has_value());
  EXPECT_FALSE(c.CollectiveTime("all_reduce", "ring", 8, 0).has_value());
  EXPECT_TRUE(c.HasCollective("all_reduce", "tree", 8));
  EXPECT_FALSE(c.HasCollective("all_reduce", "tree", 4));
}

TEST(CalibrationTest, GroupSizesAreNeverMixed) {
  Calibration c = LoadSample();
  // The 4-rank curve's own 1 GiB row (4.915 ms), not the 8-rank one (5.757 ms).
  auto t4 = c.CollectiveTime("all_reduce", "ring", 4, int64_t{1} << 30);
  ASSERT_TRUE(t4.has_value());
  EXPECT_EQ(t4->nanos(), 4915000);
}

TEST(CalibrationTest, NodeCountSeparatesCurves) {
  // The same 8 ranks on one NVSwitch node and spread over 8 nodes are different measurements.
  auto c = ParseCalibration(
      File(kRow + "," +
           R"({"op": "all_reduce", "algo": "ring", "nranks": 8, "nodes": 8, "size_bytes": 1024,
               "time_s": 4e-5, "busbw_GBps": 0.045})"),
      "f.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->CollectiveTime("all_reduce", "ring", 8, 1024)->nanos(), 10000);  // nodes = 1
  EXPECT_EQ(c->CollectiveTime("all_reduce", "ring", 8, 1024, 8)->nanos(), 40000);
  EXPECT_FALSE(c->CollectiveTime("all_reduce", "ring", 8, 1024, 2).has_value());
  std::string msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": 4,
                                     "nodes": 8, "size_bytes": 1024, "time_s": 1e-5,
                                     "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("collectives[0].nodes: 8 nodes for 4 ranks"), std::string::npos) << msg;
}

TEST(CalibrationTest, GemmExactShapeGivesItsRow) {
  Calibration c = LoadSample();
  auto qkv = c.GemmTflops("bf16", 2048, 4608, 12288);
  ASSERT_TRUE(qkv.has_value());
  EXPECT_DOUBLE_EQ(*qkv, 533.9);
  auto scores = c.GemmTflops("bf16", 2048, 2048, 128, 12);
  ASSERT_TRUE(scores.has_value());
  EXPECT_DOUBLE_EQ(*scores, 359.6);
  auto fp8 = c.GemmTflops("fp8", 2048, 4608, 12288);
  ASSERT_TRUE(fp8.has_value());
  EXPECT_DOUBLE_EQ(*fp8, 925.9);
}

TEST(CalibrationTest, GemmNearestShapeInLogSpaceWithinTwoX) {
  Calibration c = LoadSample();
  // 2048×4608×10000: qkv (k off by ln(12288/10000) = 0.21) is nearer than fc1 (n off by
  // ln(6144/4608) = 0.29 as well): qkv's 533.9.
  auto t = c.GemmTflops("bf16", 2048, 4608, 10000);
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(*t, 533.9);
  // Every row differs by more than 2× in some dimension: no answer.
  EXPECT_FALSE(c.GemmTflops("bf16", 128, 128, 128).has_value());
  // Batch counts as a dimension: 48 is 4× the measured 12.
  EXPECT_FALSE(c.GemmTflops("bf16", 2048, 2048, 128, 48).has_value());
  // No FP16 rows at all.
  EXPECT_FALSE(c.GemmTflops("fp16", 2048, 4608, 12288).has_value());
}

TEST(CalibrationTest, GpuMustMatchTheScenario) {
  Calibration c = LoadSample();
  EXPECT_TRUE(c.CheckGpu("H100-SXM-80GB").ok());
  EXPECT_TRUE(c.CheckGpu("h100").ok());
  Status a100 = c.CheckGpu("A100-SXM-80GB");
  EXPECT_EQ(a100.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(a100.message().find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(a100.message().find("A100-SXM-80GB"), std::string::npos);
  EXPECT_NE(a100.message().find(kSample), std::string::npos);
  EXPECT_FALSE(c.CheckGpu("H200").ok());  // same compute, different memory: not the same GPU
}

TEST(CalibrationTest, EfficiencyIsMeasuredOverPeak) {
  Calibration c = LoadSample();
  // qkv's 533.9 TFLOP/s against H100 SXM's 989 dense BF16: 0.5398.
  auto e = c.GemmEfficiency("bf16", 2048, 4608, 12288, 1, 989.0);
  ASSERT_TRUE(e.has_value());
  EXPECT_NEAR(*e, 533.9 / 989.0, 1e-12);
  EXPECT_FALSE(c.GemmEfficiency("bf16", 2048, 4608, 12288, 1, 0).has_value());
}

TEST(CalibrationTest, DescribeSaysWhereNumbersCameFrom) {
  Calibration c = LoadSample();
  EXPECT_EQ(c.Describe(), std::string("SAMPLE calibration ") + kSample +
                              " (not measured; 8 x NVIDIA H100 80GB HBM3, NCCL 2.30 (tuning "
                              "model), CUDA 13.0)");
  auto measured = ParseCalibration(File(kRow), "m.json");
  ASSERT_TRUE(measured.ok());
  EXPECT_EQ(measured->Describe(),
            "calibration m.json: measured 2026-11-30 on 8 x NVIDIA H100 80GB HBM3, NCCL 2.28.9, "
            "CUDA 13.0");
}

TEST(CalibrationTest, LoadForChecksTheGpu) {
  EXPECT_TRUE(LoadCalibrationFor(kSample, "H100-SXM-80GB").ok());
  auto wrong = LoadCalibrationFor(kSample, "B200");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Status::Code::kFailedPrecondition);
}

TEST(CalibrationTest, MinimalFileParses) {
  auto c = ParseCalibration(File(kRow), "f.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->is_sample());
  EXPECT_EQ(c->gemms()[0].batch, 1);
}

TEST(CalibrationTest, SyntaxErrorNamesLineAndColumn) {
  // The stray word starts at line 3, column 3.
  std::string msg = ErrorOf("{\n  \"gpu_name\": \"x\",\n  oops\n}");
  EXPECT_EQ(msg.rfind("f.json:3:3: not valid JSON", 0), 0u) << msg;
}

TEST(CalibrationTest, MissingFieldIsNamedWithItsPath) {
  std::string msg =
      ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": 8, "size_bytes": 1024,
               "busbw_GBps": 0.18})"));
  EXPECT_NE(msg.find("f.json: collectives[0].time_s: missing field"), std::string::npos) << msg;
  msg = ErrorOf(R"({"gpu_count": 1, "collectives": [], "gemm": []})");
  EXPECT_NE(msg.find("gpu_name: missing field"), std::string::npos) << msg;
}

TEST(CalibrationTest, WrongTypesAreRejected) {
  std::string msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": "8",
                                     "size_bytes": 1024, "time_s": 1e-5, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("collectives[0].nranks: expected an integer, got a string"), std::string::npos)
      << msg;
  msg = ErrorOf(File(kRow, R"({"dtype": "bf16", "m": 8.5, "n": 8, "k": 8, "tflops": 1})"));
  EXPECT_NE(msg.find("gemm[0].m: expected an integer"), std::string::npos) << msg;
  msg = ErrorOf("[1, 2]");
  EXPECT_NE(msg.find("expected a JSON object at the top level, got an array"), std::string::npos);
}

TEST(CalibrationTest, HostileJsonGivesMessagesNotCrashes) {
  // A number beyond double's range is nlohmann's out_of_range, not a parse_error.
  std::string msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": 8,
                                     "size_bytes": 1024, "time_s": 1e999, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("f.json: not valid JSON: number overflow"), std::string::npos) << msg;
  // Deeply nested values in a scalar's place are named by type, not printed.
  msg = ErrorOf(R"({"gpu_name": )" + std::string(10000, '[') + std::string(10000, ']') + "}");
  EXPECT_EQ(msg, "f.json: gpu_name: expected a string, got an array");
}

// Found by fuzz_calibration: a "\n" escape in gpu_name made Describe() two lines, and a report
// that prints it one line per fact would have been split.
TEST(CalibrationTest, ControlCharactersInLabelsAreRejected) {
  std::string text = File(kRow);
  const std::string name = R"("NVIDIA H100 80GB HBM3")";
  text.replace(text.find(name), name.size(), R"("NVIDIA H100\n80GB")");
  std::string msg = ErrorOf(text);
  EXPECT_EQ(msg,
            "f.json: gpu_name: control character U+000A at character 11; expected one line of "
            "printable text");
  msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ri\u0007ng", "nranks": 8,
                         "size_bytes": 1024, "time_s": 1e-5, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("collectives[0].algo: control character U+0007 at character 2"),
            std::string::npos)
      << msg;
  // Free text is not printed as a label: a note may span lines.
  text = File(kRow);
  text.insert(1, R"("note": "measured\nafter the driver update", )");
  auto c = ParseCalibration(text, "f.json");
  EXPECT_TRUE(c.ok()) << c.status().message();
}

TEST(CalibrationTest, NegativeOrZeroTimesAndSizesAreRejected) {
  std::string msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": 8,
                                     "size_bytes": 1024, "time_s": -1e-5, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("collectives[0].time_s: -1e-05 is not valid"), std::string::npos) << msg;
  // Found by fuzz_calibration: positive, but it rounds to a 0 ns collective.
  msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": 8,
                         "size_bytes": 64, "time_s": 1.5e-25, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("collectives[0].time_s: 1.5e-25 s is below 1 ns"), std::string::npos) << msg;
  msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": 8,
                         "size_bytes": 0, "time_s": 1e-5, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("collectives[0].size_bytes: 0 is out of range"), std::string::npos) << msg;
  msg = ErrorOf(File(kRow, R"({"dtype": "bf16", "m": 8, "n": 8, "k": 8, "tflops": 0})"));
  EXPECT_NE(msg.find("gemm[0].tflops: 0 is not valid"), std::string::npos) << msg;
}

TEST(CalibrationTest, UnknownFieldsOpsAndDuplicatesAreRejected) {
  std::string msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": 8,
                                     "size_bytes": 1024, "tim_s": 1e-5, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("collectives[0].tim_s: unknown field"), std::string::npos) << msg;
  msg = ErrorOf(File(R"({"op": "allreduce", "algo": "ring", "nranks": 8,
                         "size_bytes": 1024, "time_s": 1e-5, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("unknown collective \"allreduce\" (valid: all_reduce,"), std::string::npos)
      << msg;
  msg = ErrorOf(File(kRow + "," + kRow));
  EXPECT_NE(msg.find("collectives[1]: duplicate row"), std::string::npos) << msg;
  msg = ErrorOf(File(R"({"op": "all_reduce", "algo": "ring", "nranks": 16,
                         "size_bytes": 1024, "time_s": 1e-5, "busbw_GBps": 1})"));
  EXPECT_NE(msg.find("gpu_count is 8"), std::string::npos) << msg;
}

TEST(CalibrationTest, MissingFileIsNotFound) {
  auto c = LoadCalibration("/nonexistent/cal.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/cal.json"), std::string::npos);
}

// 16 DGX-like nodes of 8 GPUs (comm/topology.h defaults).
Topology DefaultTopology() {
  auto t = Topology::Build(TopologySpec{});
  EXPECT_TRUE(t.ok()) << t.status().message();
  return *t;
}

TEST(CalibratedCollectiveTest, CoveredCallsUseTheMeasurement) {
  Calibration c = LoadSample();
  Topology topo = DefaultTopology();
  CollectiveSpec spec{Op::kAllReduce, Algo::kRing, FirstGpus(8), uint64_t{1} << 30};
  auto t = EstimateCollectiveCalibrated(topo, spec, &c);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->calibrated);
  EXPECT_FALSE(t->protocol.has_value());
  EXPECT_EQ(t->time.nanos(), 5757000);
  // kAuto takes the faster measured algorithm: at 1 GiB ring (5.757 ms) beats tree (7.113 ms).
  spec.algo = Algo::kAuto;
  auto a = EstimateCollectiveCalibrated(topo, spec, &c);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->algo, Algo::kRing);
  EXPECT_EQ(a->time.nanos(), 5757000);
}

TEST(CalibratedCollectiveTest, UncoveredCallsFallBackToTheModel) {
  Calibration c = LoadSample();
  Topology topo = DefaultTopology();
  // One GPU on each of 8 nodes: 8 ranks but 8 nodes, which the single-node sample never measured.
  std::vector<int> spread;
  for (int n = 0; n < 8; ++n) spread.push_back(n * 8);
  CollectiveSpec spec{Op::kAllReduce, Algo::kRing, spread, uint64_t{1} << 30};
  auto t = EstimateCollectiveCalibrated(topo, spec, &c);
  auto model = EstimateCollective(topo, spec);
  ASSERT_TRUE(t.ok() && model.ok());
  EXPECT_FALSE(t->calibrated);
  EXPECT_EQ(t->time, model->time);
  EXPECT_TRUE(t->protocol.has_value());
  // No calibration at all: the model, whatever the group.
  spec.gpus = FirstGpus(8);
  auto none = EstimateCollectiveCalibrated(topo, spec, nullptr);
  auto model8 = EstimateCollective(topo, spec);
  ASSERT_TRUE(none.ok() && model8.ok());
  EXPECT_FALSE(none->calibrated);
  EXPECT_EQ(none->time, model8->time);
  // Invalid specs are still errors.
  spec.bytes = 0;
  EXPECT_FALSE(EstimateCollectiveCalibrated(topo, spec, &c).ok());
}

}  // namespace
}  // namespace trainsim::comm
