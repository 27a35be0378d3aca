// `trainsim diagnose` and `trainsim run --ops` through the binary: the bundled
// low_utilisation example, JSON keys, measured figures, profiles, determinism.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace trainsim::cli {
namespace {

constexpr int kExitOk = 0;
constexpr char kLow[] = "scenarios/examples/low_utilisation.textproto";
constexpr char kCpuTrace[] = "tests/data/profiles/cpu_trace.json";
constexpr char kGpuTrace[] = "tests/data/profiles/gpu_hand.json";

nlohmann::json Json(const std::vector<std::string>& args) {
  test_util::RunResult r = test_util::RunTrainsim(args);
  EXPECT_EQ(r.exit_code, kExitOk) << r.err;
  return nlohmann::json::parse(r.out);
}

// The acceptance line: near 30% MFU, the input stall named first, the proposals
// together predicted above 45%.
TEST(DiagnoseCommandTest, LowUtilisationExampleNamesTheInputStallFirst) {
  const nlohmann::json j = Json({"diagnose", kLow, "--json"});
  EXPECT_GT(j["mfu"].get<double>(), 0.25);
  EXPECT_LT(j["mfu"].get<double>(), 0.35);
  ASSERT_FALSE(j["causes"].empty());
  EXPECT_EQ(j["causes"][0]["name"], "input stall");
  // It is also the largest of the step's causes.
  double largest = 0;
  for (const auto& c : j["causes"]) largest = std::max(largest, c["share_of_step"].get<double>());
  EXPECT_EQ(j["causes"][0]["share_of_step"].get<double>(), largest);
  ASSERT_GE(j["proposals"].size(), 2u);
  const nlohmann::json& together = j["proposals"].back();
  EXPECT_GT(together["predicted_mfu"].get<double>(), 0.45);
  EXPECT_LT(together["predicted_step_s"].get<double>(), j["step_time_s"].get<double>());
  for (const auto& p : j["proposals"]) {
    for (const char* k : {"change", "predicted_step_s", "predicted_mfu"}) {
      EXPECT_TRUE(p.contains(k)) << k;
    }
  }
}

// A fine-grained MoE model's diagnosis opens with the validation's warning (its step is
// optimistic, docs/validation.md), as `run` and `sweep` do; a dense model's does not.
TEST(DiagnoseCommandTest, FineGrainedMoeDiagnosisSaysTheStepIsOptimistic) {
  const nlohmann::json moe =
      Json({"diagnose", "scenarios/validation/bridge_h100_qwen3_30b_a3b_fp8.textproto", "--json"});
  ASSERT_TRUE(moe.contains("fidelity"));
  EXPECT_NE(moe["fidelity"].get<std::string>().find("128 experts"), std::string::npos);
  EXPECT_FALSE(Json({"diagnose", kLow, "--json"}).contains("fidelity"));
}

// low_utilisation reduces its gradients after the backward. With the default (Megatron-Core's)
// buckets, overlapping them is proposed as it is, and is faster than the step as it is.
// With loader workers enough that the input stall does not set the step (a loader that does
// hides every other gain: the step is its m x t).
TEST(DiagnoseCommandTest, GradientOverlapIsProposedAndFaster) {
  const nlohmann::json j = Json({"diagnose", kLow, "--set", "input.workers=16", "--json"});
  const nlohmann::json* plain = nullptr;
  for (const auto& p : j["proposals"]) {
    const std::vector<std::string> sets = p["sets"];
    if (sets == std::vector<std::string>{"parallelism.overlap_grad_reduce=true"}) plain = &p;
    for (const auto& s : sets) EXPECT_EQ(s.find("dp_bucket_bytes"), std::string::npos) << s;
  }
  ASSERT_NE(plain, nullptr);
  EXPECT_LT((*plain)["predicted_step_s"].get<double>(), j["step_time_s"].get<double>());
}

// With PyTorch DDP's 25 MiB buckets, overlapping in them costs more than it hides (each of the
// many rings pays its latency), so diagnose also proposes the overlap with Megatron-Core's
// buckets: max(40 M, 1 M x DP x CP) = 128 M parameters at DP 128, x 4 bytes (fp32 reduction)
// = 512 MB, and that one is faster than both the plain overlap and the step as it is.
// ZeRO-2 reduces every micro-batch's gradients (low_utilisation: 8 of them, over 16 nodes; with
// loader workers enough that its input stall does not hide them): the DP cause says so, and
// ZeRO-1, which reduces once a step, is proposed and faster.
TEST(DiagnoseCommandTest, ZeroTwosPerMicroBatchReductionsProposeZeroOne) {
  const nlohmann::json j = Json({"diagnose", kLow, "--set", "parallelism.zero_stage=2", "--set",
                                 "input.workers=16", "--json"});
  bool named = false;
  for (const auto& c : j["causes"]) {
    if (c["name"] == "exposed DP comm") {
      named = c["evidence"].get<std::string>().find("micro-batches' backwards waits") !=
              std::string::npos;
    }
  }
  EXPECT_TRUE(named);
  const nlohmann::json* zero1 = nullptr;
  for (const auto& p : j["proposals"]) {
    if (p["sets"] == std::vector<std::string>{"parallelism.zero_stage=1"}) zero1 = &p;
  }
  ASSERT_NE(zero1, nullptr);
  EXPECT_LT((*zero1)["predicted_step_s"].get<double>(), j["step_time_s"].get<double>());
  // Not proposed where ZeRO-1 is already in use.
  const nlohmann::json zero_one = Json({"diagnose", kLow, "--json"});
  for (const auto& p : zero_one["proposals"]) {
    EXPECT_NE(p["sets"], std::vector<std::string>{"parallelism.zero_stage=1"});
  }
}

TEST(DiagnoseCommandTest, GradientOverlapIsAlsoProposedWithMegatronsBucketsWhenTheyAreSmall) {
  const nlohmann::json j = Json({"diagnose", kLow, "--set", "parallelism.dp_bucket_bytes=26214400",
                                 "--set", "input.workers=16", "--json"});
  const nlohmann::json* plain = nullptr;
  const nlohmann::json* megatron = nullptr;
  for (const auto& p : j["proposals"]) {
    const std::vector<std::string> sets = p["sets"];
    if (sets == std::vector<std::string>{"parallelism.overlap_grad_reduce=true"}) plain = &p;
    if (sets == std::vector<std::string>{"parallelism.overlap_grad_reduce=true",
                                         "parallelism.dp_bucket_bytes=512000000"}) {
      megatron = &p;
    }
  }
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(megatron, nullptr);
  EXPECT_LT((*megatron)["predicted_step_s"].get<double>(),
            (*plain)["predicted_step_s"].get<double>());
  EXPECT_LT((*megatron)["predicted_step_s"].get<double>(), j["step_time_s"].get<double>());
}

TEST(DiagnoseCommandTest, CausesComeInTheOrderAnExpertChecksThem) {
  const nlohmann::json j = Json({"diagnose", kLow, "--json"});
  const std::vector<std::string> order = {"input stall",         "host/launch overhead",
                                          "memory-bound ops",    "small-GEMM inefficiency",
                                          "exposed TP comm",     "exposed CP comm",
                                          "exposed EP comm",     "exposed DP comm",
                                          "comm-slowed compute", "exposed PP comm",
                                          "pipeline bubble",     "stragglers",
                                          "checkpoint stalls",   "failures"};
  ASSERT_EQ(j["causes"].size(), order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(j["causes"][i]["name"], order[i]);
    EXPECT_TRUE(j["causes"][i]["evidence"].is_string());
    EXPECT_GE(j["causes"][i]["share_of_step"].get<double>(), 0.0);
  }
}

// Each communication cause is its own breakdown row over the step: the TP cause must not
// carry expert all-to-alls (it once summed TP, CP and EP under "exposed TP comm", which sent
// users of MoE layouts to TP overlap).
TEST(DiagnoseCommandTest, TpCpAndEpCommAreSeparateCausesMatchingTheStepBreakdown) {
  constexpr char kMoe[] = "scenarios/examples/mixtral_8x22b_h100.textproto";
  const nlohmann::json d = Json({"diagnose", kMoe, "--json", "--no-run"});
  const nlohmann::json run = Json({"run", kMoe, "--json"});
  const nlohmann::json& b = run["step"]["breakdown_s"];
  const double step = run["step"]["time_s"].get<double>();
  std::map<std::string, double> share;
  for (const auto& c : d["causes"]) share[c["name"]] = c["share_of_step"].get<double>();
  ASSERT_GT(b["exposed_ep_comm"].get<double>(), 0.0);
  EXPECT_NEAR(share["exposed TP comm"], b["exposed_tp_comm"].get<double>() / step, 1e-9);
  EXPECT_NEAR(share["exposed CP comm"], b["exposed_cp_comm"].get<double>() / step, 1e-9);
  EXPECT_NEAR(share["exposed EP comm"], b["exposed_ep_comm"].get<double>() / step, 1e-9);
}

// DeepSeek-V3's example runs EP 64 across 8 nodes with NCCL all-to-alls and no overlap: the EP
// cause proposes the all-to-all overlap and the node-deduplicating FLEX dispatcher, and both
// shorten the step when re-simulated.
TEST(DiagnoseCommandTest, ExposedEpCommProposesOverlapAndFlexAndNamesTheBusiestStage) {
  const nlohmann::json d =
      Json({"diagnose", "scenarios/examples/deepseek_v3_h100.textproto", "--json", "--no-run"});
  int found = 0;
  for (const auto& p : d["proposals"]) {
    const std::string change = p["change"];
    if (change == "EP all-to-all overlap on" || change.rfind("FLEX dispatcher", 0) == 0) {
      ++found;
      EXPECT_LT(p["predicted_step_s"].get<double>(), d["step_time_s"].get<double>()) << change;
    }
  }
  EXPECT_EQ(found, 2);
  // Stage 0 (three dense layers and one MoE layer) waits for the MoE stages: the pipeline-wait
  // evidence names a busier stage and its all-to-alls, not the sends.
  for (const auto& c : d["causes"]) {
    if (c["name"] != "exposed PP comm") continue;
    const std::string evidence = c["evidence"];
    EXPECT_NE(evidence.find("is the busiest"), std::string::npos) << evidence;
    EXPECT_EQ(evidence.find("stage 0 is"), std::string::npos) << evidence;
    EXPECT_NE(evidence.find("exposed EP comm"), std::string::npos) << evidence;
  }
}

// Inside one node FLEX still sends fewer copies when a GPU holds several experts: one per
// destination GPU, not one per expert (DeepSeek proxy: 32 experts, top-8, 4 per GPU on 8).
TEST(DiagnoseCommandTest, ExposedEpCommInsideOneNodeProposesFlexPerDestinationGpu) {
  const nlohmann::json d =
      Json({"diagnose", "scenarios/validation/checks/moe_perf_deepseek_proxy_h100.textproto",
            "--json", "--no-run"});
  bool found = false;
  for (const auto& p : d["proposals"]) {
    const std::string change = p["change"];
    if (change.rfind("FLEX dispatcher", 0) != 0) continue;
    found = true;
    EXPECT_NE(change.find("per destination GPU"), std::string::npos) << change;
    EXPECT_LT(p["predicted_step_s"].get<double>(), d["step_time_s"].get<double>());
  }
  EXPECT_TRUE(found);
}

// GPT-OSS 120B's recipe splits 36 layers evenly over PP 4, and the last stage also carries the
// 201k-vocabulary output layer and loss: it is the busiest, and the others wait for it. The
// pipeline-wait cause proposes uneven end stages (a valid split: 36 = first + last + 2 middle
// stages of equal size) with fewer layers on the last stage, and the re-simulated step is
// shorter.
TEST(DiagnoseCommandTest, UnevenStagesAreProposedWhenTheLastStageIsTheBusiest) {
  const nlohmann::json d =
      Json({"diagnose", "scenarios/validation/bridge_h100_gpt_oss_120b_bf16.textproto", "--json",
            "--no-run"});
  bool found = false;
  for (const auto& p : d["proposals"]) {
    const std::string change = p["change"];
    if (change.rfind("uneven end stages", 0) != 0) continue;
    found = true;
    int first = -1, last = -1;
    for (const auto& set : p["sets"]) {
      const std::string kv = set;
      if (kv.rfind("parallelism.first_stage_layers=", 0) == 0) first = std::stoi(kv.substr(31));
      if (kv.rfind("parallelism.last_stage_layers=", 0) == 0) last = std::stoi(kv.substr(30));
    }
    ASSERT_GE(first, 0);
    ASSERT_GE(last, 0);
    EXPECT_LT(last, 36 / 4) << "the last stage sheds layers";
    EXPECT_EQ((36 - first - last) % 2, 0) << "the two middle stages stay even";
    EXPECT_LT(p["predicted_step_s"].get<double>(), d["step_time_s"].get<double>());
  }
  EXPECT_TRUE(found);
}

TEST(DiagnoseCommandTest, MeasuredMfuGivesTheUnexplainedShare) {
  const nlohmann::json base = Json({"diagnose", kLow, "--json", "--no-run"});
  const double mfu = base["mfu"].get<double>();
  // Measured at half the predicted MFU: the step is twice as long, half of it unexplained.
  const nlohmann::json j =
      Json({"diagnose", kLow, "--json", "--no-run", "--measured-mfu", std::to_string(mfu / 2)});
  EXPECT_NEAR(j["measured"]["unexplained_share"].get<double>(), 0.5, 1e-4);
  EXPECT_NEAR(j["measured"]["step_time_s"].get<double>(), 2 * base["step_time_s"].get<double>(),
              1e-3 * base["step_time_s"].get<double>());
}

// A MoE model run eagerly on Hopper and measured much slower than modelled: the note says where
// the GPU measurements put the gap (mostly around the expert GEMMs, not in them). A dense model,
// another architecture, or a measurement the model explains gets no such note.
TEST(DiagnoseCommandTest, UnexplainedMoeStepPointsAroundTheExpertGemms) {
  const char* moe = "scenarios/validation/bridge_h100_qwen3_30b_a3b_fp8.textproto";
  const nlohmann::json base = Json({"diagnose", moe, "--json", "--no-run"});
  const double step = base["step_time_s"].get<double>();
  const std::string hint = "lies around them";
  auto notes = [](const nlohmann::json& j) { return j["notes"].dump(); };
  const nlohmann::json slow =
      Json({"diagnose", moe, "--json", "--no-run", "--measured-step", std::to_string(1.5 * step)});
  EXPECT_NE(notes(slow).find(hint), std::string::npos) << notes(slow);
  const nlohmann::json close =
      Json({"diagnose", moe, "--json", "--no-run", "--measured-step", std::to_string(1.05 * step)});
  EXPECT_EQ(notes(close).find(hint), std::string::npos) << notes(close);
  // Only Hopper was measured: the same model on B200 gets no such note.
  const char* b200 = "scenarios/validation/bridge_b200_qwen3_30b_a3b_mxfp8.textproto";
  const double b200_step = Json({"diagnose", b200, "--json", "--no-run"})["step_time_s"];
  const nlohmann::json blackwell = Json(
      {"diagnose", b200, "--json", "--no-run", "--measured-step", std::to_string(1.5 * b200_step)});
  EXPECT_EQ(notes(blackwell).find(hint), std::string::npos) << notes(blackwell);
  const double dense_mfu = Json({"diagnose", kLow, "--json", "--no-run"})["mfu"].get<double>();
  const nlohmann::json dense = Json(
      {"diagnose", kLow, "--json", "--no-run", "--measured-mfu", std::to_string(dense_mfu / 2)});
  EXPECT_GT(dense["measured"]["unexplained_share"].get<double>(), 0.4);
  EXPECT_EQ(notes(dense).find(hint), std::string::npos) << notes(dense);
}

// A measured step half the model's is 50% shorter than it (the shortfall is a share of the
// model's step; it read 100% when divided by the measured one, and 401% at a quarter).
TEST(DiagnoseCommandTest, AMeasuredStepShorterThanTheModelsIsGivenAsAShareOfTheModels) {
  const nlohmann::json base = Json({"diagnose", kLow, "--json", "--no-run"});
  const double step = base["step_time_s"].get<double>();
  const test_util::RunResult r = test_util::RunTrainsim(
      {"diagnose", kLow, "--no-run", "--measured-step", std::to_string(step / 2)});
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("the measured step is 50.0% shorter than the model's"), std::string::npos)
      << r.out;
}

TEST(DiagnoseCommandTest, CpuProfileReportsItsStepsGroupsAndIdleShare) {
  const nlohmann::json j = Json({"diagnose", kLow, "--json", "--no-run", "--profile", kCpuTrace});
  const nlohmann::json& p = j["profile"];
  EXPECT_EQ(p["device"], "cpu");
  EXPECT_EQ(p["steps"].size(), 3u);
  // make_cpu_trace.py sleeps 20 ms per step in its loader, outside every operator.
  EXPECT_GT(p["idle_share"].get<double>(), 0.0);
  for (const char* g : {"gemm", "attention", "nccl", "other", "idle"}) {
    EXPECT_TRUE(p["groups"].contains(g)) << g;
  }
}

TEST(DiagnoseCommandTest, HandWrittenGpuProfileFindsTheIdleGpu) {
  const nlohmann::json j = Json({"diagnose", kLow, "--json", "--no-run", "--profile", kGpuTrace});
  const nlohmann::json& p = j["profile"];
  EXPECT_EQ(p["device"], "gpu");
  EXPECT_DOUBLE_EQ(p["idle_share"].get<double>(), 0.4);  // 40 of every 100 ms
  EXPECT_DOUBLE_EQ(p["groups"]["nccl"]["measured_s"].get<double>(), 0.020);
  bool idle_named = false;
  for (const auto& f : p["findings"]) {
    idle_named |= f.get<std::string>().rfind("GPU idle 40% between kernels", 0) == 0;
  }
  EXPECT_TRUE(idle_named) << p["findings"].dump();
}

// Bad measurements and profile paths found by a new user: "nan" passed CLI::Range (every
// comparison with it is false) and printed "measured step nan ms"; a directory as the profile
// was called "larger than 2 GiB". Each is now one message naming the option, exit 2.
TEST(DiagnoseCommandTest, NonFiniteMeasurementsAndADirectoryProfileAreBadInput) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--measured-step", "nan"}, "--measured-step: must be a step time in seconds above 1e-06"},
      {{"--measured-step", "inf"}, "--measured-step: must be a step time in seconds above 1e-06"},
      {{"--measured-mfu", "nan"}, "--measured-mfu: must be an MFU as a fraction above 1e-06"},
      {{"--measured-mfu", "0"},
       "--measured-mfu: must be an MFU as a fraction above 1e-06 and at most 1"},
      // A denormal MFU passed "above 0" and divided the step to infinity (the review's case).
      {{"--measured-mfu", "1e-320"}, "--measured-mfu: must be an MFU as a fraction above 1e-06"},
      {{"--profile", "scenarios"}, "--profile scenarios: a directory"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"diagnose", kLow, "--no-run"};
    args.insert(args.end(), extra.begin(), extra.end());
    test_util::RunResult r = test_util::RunTrainsim(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << " " << extra[1] << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(DiagnoseCommandTest, SameInputGivesIdenticalOutput) {
  test_util::RunResult a = test_util::RunTrainsim({"diagnose", kLow, "--no-run"});
  test_util::RunResult b = test_util::RunTrainsim({"diagnose", kLow, "--no-run"});
  EXPECT_EQ(a.exit_code, kExitOk) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(RunOpsTest, OpsJsonClassifiesEveryOpAgainstTheRidgePoint) {
  const nlohmann::json j = Json({"run", kLow, "--json", "--ops"});
  ASSERT_FALSE(j["ops"].empty());
  bool some_compute = false, some_memory = false;
  for (const auto& op : j["ops"]) {
    const double intensity = op["arithmetic_intensity"].get<double>();
    const double ridge = op["ridge_point"].get<double>();
    EXPECT_EQ(op["bound"], intensity >= ridge ? "compute" : "memory") << op.dump();
    EXPECT_GT(op["achieved_fraction"].get<double>(), 0.0);
    EXPECT_LE(op["achieved_fraction"].get<double>(), 1.0);
    some_compute |= op["bound"] == "compute";
    some_memory |= op["bound"] == "memory";
  }
  EXPECT_TRUE(some_compute);
  EXPECT_TRUE(some_memory);
}

TEST(RunOpsTest, InputStallIsARowOfTheStepBreakdown) {
  const nlohmann::json j = Json({"run", kLow, "--json"});
  EXPECT_GT(j["step"]["breakdown_s"]["input_stall"].get<double>(), 0.0);
}

// Compute stretched by the SMs overlapped NCCL kernels hold is its own cause, with the share the
// step breakdown gives it and evidence naming what overlaps (here the DP buckets under the
// backward and the overlapped parameter gather of the Mixtral example).
TEST(DiagnoseCommandTest, CommSlowedComputeIsACauseMatchingTheStepBreakdown) {
  constexpr char kMoe[] = "scenarios/examples/mixtral_8x22b_h100.textproto";
  const nlohmann::json d = Json({"diagnose", kMoe, "--json", "--no-run"});
  const nlohmann::json run = Json({"run", kMoe, "--json"});
  const double slowed = run["step"]["breakdown_s"]["compute_slowed_by_comm"].get<double>();
  const double step = run["step"]["time_s"].get<double>();
  ASSERT_GT(slowed, 0.0);
  bool found = false;
  for (const auto& c : d["causes"]) {
    if (c["name"] != "comm-slowed compute") continue;
    found = true;
    EXPECT_NEAR(c["share_of_step"].get<double>(), slowed / step, 1e-12);
    const std::string ev = c["evidence"].get<std::string>();
    EXPECT_NE(ev.find("DP gradient buckets"), std::string::npos) << ev;
    EXPECT_NE(ev.find("parameter all-gather"), std::string::npos) << ev;
    EXPECT_NE(ev.find("132 SMs"), std::string::npos) << ev;  // H100 SXM
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace trainsim::cli
