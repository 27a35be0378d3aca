// Runs the calibration runner's GPU path on whatever GPUs are present: a short sweep of every
// collective on all visible GPUs and one small GEMM, all results checked on the host, and the
// report read back by comm::LoadCalibration. Skips (GTEST_SKIP, reported by ctest as skipped)
// when there is no GPU or no usable driver, as on the CPU-only development machines.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "comm/calibration.h"
#include "comm/nccl/gpu_bench.h"

namespace trainsim::comm::nccl {
namespace {

TEST(GpuRunnerTest, ShortCalibrationIsCheckedAndLoadsBack) {
  auto env = ProbeGpus();
  if (!env.ok())
    GTEST_SKIP() << "no GPU, skipping the NCCL/cuBLAS path: " << env.status().message();
  int argc = 0;
  auto group = ProcessGroup::Init(&argc, nullptr);
  ASSERT_TRUE(group.ok()) << group.status().message();

  RunnerOptions o;
  o.max_bytes = 64 << 10;
  o.step_factor = 8;
  o.warmup = 1;
  o.repeats = 3;
  o.timeout_s = 30;
  o.gemms = {{256, 512, 1024, 1, "small"}, {128, 128, 64, 4, "batched"}};
  o.dtypes = {"bf16", "fp16", "fp8"};
  std::vector<int> devices;
  for (int i = 0; i < static_cast<int>(env->devices.size()); ++i) devices.push_back(i);

  Report report;
  report.gpu_name = env->devices[0].name;
  report.gpu_count = static_cast<int>(devices.size());
  report.nccl_version = env->nccl;
  report.cuda_version = env->cuda_runtime;
  report.date = "test";
  std::ostringstream table;
  Status st = RunCollectives(o, *env, devices, *group, &report, table);
  ASSERT_TRUE(st.ok()) << st.message() << "\n" << table.str();
  st = RunGemms(o, *env, 0, &report, table);
  ASSERT_TRUE(st.ok()) << st.message() << "\n" << table.str();
  std::cout << table.str();

  // 8 B .. 64 KiB by 8: 8, 64, 512, 4K, 32K; all_reduce twice (ring, tree), the other four once;
  // reduce_scatter/all_gather skip sizes smaller than one float per rank.
  ASSERT_FALSE(report.collectives.empty());
  for (const CollectiveRow& r : report.collectives) {
    EXPECT_TRUE(r.checked) << r.op;
    EXPECT_GT(r.time_s, 0) << r.op;
  }
  ASSERT_GE(report.gemms.size(), 4u);  // bf16 and fp16 always; fp8 on sm_89+
  for (const GemmRow& g : report.gemms) EXPECT_TRUE(g.checked) << g.dtype;

  std::ostringstream json;
  WriteJson(report, json);
  auto c = ParseCalibration(json.str(), "gpu-test.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->CollectiveTime("all_reduce", "ring", report.gpu_count, 512).has_value());
  EXPECT_TRUE(c->GemmTflops("bf16", 256, 512, 1024).has_value());
}

}  // namespace
}  // namespace trainsim::comm::nccl
