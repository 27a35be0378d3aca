// profile/kineto_profile.h on real and hand-written PyTorch profiler traces.
//
// tests/data/profiles/cpu_trace.json is a real trace (make_cpu_trace.py, PyTorch 1.13 on the
// CPU); its steps, groups and idle time are checked against a second parse written here in a
// few lines of Python (json module), independent of the C++ reader. gpu_hand.json is written
// by hand; its expected numbers are worked out in the comments below.
#include "profile/kineto_profile.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace trainsim::profile {
namespace {

const std::string kDir = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/profiles/";

// The second parse: per ProfilerStep#N, the top-level operators of each thread that start in
// the step, grouped by name, their union and the step's idle time (µs).
constexpr char kPythonParse[] = R"PY(
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
ev = [e for e in ev if e.get("ph") == "X"]
steps = sorted([e for e in ev if e["name"].startswith("ProfilerStep#")], key=lambda e: e["ts"])
work = [e for e in ev if not e["name"].startswith("ProfilerStep#")
        and e.get("cat", "") in ("", "cpu_op", "user_annotation")]
top = []
for th in sorted({(str(e["pid"]), str(e["tid"])) for e in work}):
    end = -1e300
    for e in sorted([e for e in work if (str(e["pid"]), str(e["tid"])) == th],
                    key=lambda e: (e["ts"], -e["dur"])):
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e["dur"]
def group(n):
    n = n.lower()
    if "nccl" in n or "allreduce" in n: return "nccl"
    if "attention" in n or "flash" in n: return "attention"
    if any(p in n for p in ("aten::mm", "aten::addmm", "aten::bmm", "aten::linear",
                            "aten::matmul", "mmbackward", "gemm")): return "gemm"
    return "other"
out = []
for s in steps:
    lo, hi = s["ts"], s["ts"] + s["dur"]
    mine = [e for e in top if lo <= e["ts"] < hi]
    g = {"gemm": 0, "attention": 0, "nccl": 0, "other": 0}
    for e in mine:
        g[group(e["name"])] += min(e["ts"] + e["dur"], hi) - e["ts"]
    busy, cur = 0, None
    for a, b in sorted((max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in mine):
        if b <= a: continue
        if cur and a <= cur[1]: cur[1] = max(cur[1], b); continue
        if cur: busy += cur[1] - cur[0]
        cur = [a, b]
    if cur: busy += cur[1] - cur[0]
    out.append({"n": int(s["name"][13:]), "dur": s["dur"], "events": len(mine), "g": g,
                "busy": busy})
print(json.dumps(out))
)PY";

nlohmann::json PythonParse(const std::string& path) {
  const std::string script = testing::TempDir() + "/parse_trace.py";
  {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(script.c_str(), "w"), &std::fclose);
    std::fputs(kPythonParse, f.get());
  }
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(("python3 " + script + " " + path).c_str(), "r"),
                                          &pclose);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
  return nlohmann::json::parse(out);
}

TEST(KinetoProfileTest, CpuTraceMatchesAnIndependentPythonParse) {
  Result<Profile> prof = ReadKinetoTrace(kDir + "cpu_trace.json");
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  EXPECT_FALSE(prof->gpu);
  const nlohmann::json want = PythonParse(kDir + "cpu_trace.json");
  ASSERT_EQ(prof->steps.size(), want.size());
  ASSERT_EQ(want.size(), 3u);  // make_cpu_trace.py records 3 active steps
  for (size_t i = 0; i < want.size(); ++i) {
    const ProfileStep& s = prof->steps[i];
    const nlohmann::json& w = want[i];
    EXPECT_EQ(s.number, w["n"].get<int>());
    EXPECT_DOUBLE_EQ(s.duration_us, w["dur"].get<double>());
    EXPECT_EQ(s.events, w["events"].get<int>());
    for (int k = 0; k < kNumGroups; ++k) {
      const char* g = GroupName(KernelGroup(k));
      EXPECT_NEAR(s.group_us[k], w["g"][g].get<double>(), 1e-6) << "step " << s.number << " " << g;
    }
    EXPECT_NEAR(s.busy_us, w["busy"].get<double>(), 1e-6);
    // The script's loader sleeps 20 ms per step outside any operator: idle at least that.
    EXPECT_GE(s.idle_us(), 20000.0);
    EXPECT_GT(s.group_us[int(KernelGroup::kGemm)], 0.0);
  }
}

// gpu_hand.json: two 100 ms steps. Step 10 runs on stream 7 a 30 ms cuBLAS GEMM, a 10 ms flash
// attention, a 15 ms NCCL all-reduce and a 5 ms element-wise add, back to back: busy 60 ms,
// idle 40 ms. Step 11 repeats them and adds a 10 ms NCCL reduce-scatter on stream 20 under the
// GEMM: NCCL 25 ms, busy still 60 ms. A last add starts after step 11 ends and counts nowhere.
// The CPU's aten::mm and cudaLaunchKernel are not GPU work.
TEST(KinetoProfileTest, HandWrittenGpuTraceGivesTheWorkedOutGroups) {
  Result<Profile> prof = ReadKinetoTrace(kDir + "gpu_hand.json");
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  EXPECT_TRUE(prof->gpu);
  ASSERT_EQ(prof->steps.size(), 2u);
  const ProfileStep& a = prof->steps[0];
  const ProfileStep& b = prof->steps[1];
  EXPECT_EQ(a.number, 10);
  EXPECT_EQ(b.number, 11);
  EXPECT_EQ(a.events, 4);
  EXPECT_EQ(b.events, 5);
  EXPECT_DOUBLE_EQ(a.group_us[int(KernelGroup::kGemm)], 30000);
  EXPECT_DOUBLE_EQ(a.group_us[int(KernelGroup::kAttention)], 10000);
  EXPECT_DOUBLE_EQ(a.group_us[int(KernelGroup::kNccl)], 15000);
  EXPECT_DOUBLE_EQ(a.group_us[int(KernelGroup::kOther)], 5000);
  EXPECT_DOUBLE_EQ(b.group_us[int(KernelGroup::kNccl)], 25000);
  EXPECT_DOUBLE_EQ(a.busy_us, 60000);
  EXPECT_DOUBLE_EQ(b.busy_us, 60000);
  EXPECT_DOUBLE_EQ(a.idle_us(), 40000);
  EXPECT_DOUBLE_EQ(prof->mean_group_us(KernelGroup::kNccl), 20000);
  EXPECT_DOUBLE_EQ(prof->idle_share(), 0.4);
}

TEST(KinetoProfileTest, KernelNamesFallInTheirGroups) {
  EXPECT_EQ(ClassifyKernel("ncclDevKernel_AllGather_RING_LL"), KernelGroup::kNccl);
  EXPECT_EQ(ClassifyKernel("void flash::flash_bwd_dq_dk_dv_loop_kernel<>"),
            KernelGroup::kAttention);
  EXPECT_EQ(ClassifyKernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop"),
            KernelGroup::kAttention);
  EXPECT_EQ(ClassifyKernel("sm90_xmma_gemm_bf16bf16_bf16f32"), KernelGroup::kGemm);
  EXPECT_EQ(ClassifyKernel("aten::addmm"), KernelGroup::kGemm);
  EXPECT_EQ(ClassifyKernel("void at::native::vectorized_elementwise_kernel<4>"),
            KernelGroup::kOther);
}

TEST(KinetoProfileTest, BadTracesAreRefusedWithTheReason) {
  EXPECT_NE(ParseKinetoTrace("not json", "t").status().message().find("not JSON"),
            std::string::npos);
  EXPECT_NE(ParseKinetoTrace("{\"a\":1}", "t").status().message().find("not a Chrome trace"),
            std::string::npos);
  EXPECT_NE(ParseKinetoTrace("{\"traceEvents\":[]}", "t").status().message().find("no steps"),
            std::string::npos);
  const std::string two_devices =
      R"({"traceEvents":[{"ph":"X","name":"ProfilerStep#1","ts":0,"dur":9},)"
      R"({"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"device":0}},)"
      R"({"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"device":3}}]})";
  Result<Profile> r = ParseKinetoTrace(two_devices, "t");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("mixes ranks"), std::string::npos);
}

// A step annotation with a duration that is not a positive number made a step of zero length:
// every group 0 ms, exit 0. And steps whose clock misses every kernel read as all idle.
TEST(KinetoProfileTest, BrokenStepAnnotationsAreRefusedNotReadAsEmptySteps) {
  const std::string kernel =
      R"({"ph":"X","cat":"kernel","name":"sm90_xmma_gemm","ts":10,"dur":5,"args":{"device":0}})";
  for (const std::string step : {R"("ts":0,"dur":-5)", R"("ts":0,"dur":"abc")", R"("ts":0)",
                                 R"("ts":"0","dur":50)", R"("ts":0,"dur":0)"}) {
    const std::string trace =
        R"({"traceEvents":[{"ph":"X","name":"ProfilerStep#1",)" + step + "}," + kernel + "]}";
    Result<Profile> bad = ParseKinetoTrace(trace, "t.json");
    ASSERT_FALSE(bad.ok()) << step;
    EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("ProfilerStep#1 has"), std::string::npos)
        << bad.status().message();
  }
  // A step at ts 1e300: the kernel at ts 10 is in no step.
  Result<Profile> apart = ParseKinetoTrace(
      R"({"traceEvents":[{"ph":"X","name":"ProfilerStep#1","ts":1e300,"dur":50},)" + kernel + "]}",
      "t.json");
  ASSERT_FALSE(apart.ok());
  EXPECT_NE(apart.status().message().find("none of its 1 kernels starts inside"), std::string::npos)
      << apart.status().message();
  // The same kernel inside a valid step is read.
  Result<Profile> good = ParseKinetoTrace(
      R"({"traceEvents":[{"ph":"X","name":"ProfilerStep#1","ts":0,"dur":50},)" + kernel + "]}",
      "t.json");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_DOUBLE_EQ(good->steps[0].group_us[int(KernelGroup::kGemm)], 5);
}

}  // namespace
}  // namespace trainsim::profile
