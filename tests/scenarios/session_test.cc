// scenarios/session.h: what the commands ask of a loaded scenario.
#include "scenarios/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "parallelism/compute.h"
#include "scenarios/step_config.h"
#include "step/pass_costs.h"
#include "step/priced_ops.h"

namespace trainsim::scenarios {
namespace {

constexpr char kDemo[] = "scenarios/examples/demo.textproto";

ResolvedScenario Demo(std::vector<std::string> sets = {}) {
  auto s = LoadScenario(kDemo, sets);
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto r = Resolve(*s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

TEST(SessionTest, ScenarioCalibrationComesFromFlagOrScenario) {
  // No calibration anywhere: none.
  auto none = LoadScenarioCalibration(Demo(), "");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none->has_value());
  // The flag: the checked-in H100 sample, for the demo's H100 scenario.
  auto flag = LoadScenarioCalibration(Demo(), "scenarios/calibration/dgx_h100_sample.json");
  ASSERT_TRUE(flag.ok()) << flag.status().message();
  ASSERT_TRUE(flag->has_value());
  EXPECT_TRUE((*flag)->is_sample());
  // The scenario field (relative to the scenario file), on the wrong GPU: an error.
  auto h200 =
      LoadScenarioCalibration(Demo({"cluster.calibration=../calibration/dgx_h100_sample.json",
                                    "cluster.gpu=H200-SXM-141GB", "cluster.node_type=DGX-H200"}),
                              "");
  ASSERT_FALSE(h200.ok());
  EXPECT_NE(h200.status().message().find("H200-SXM-141GB"), std::string::npos)
      << h200.status().message();
}

TEST(SessionTest, RunOutcomeCarriesTheTypedRunAndItsPhases) {
  const ResolvedScenario r = Demo();
  Result<step::StepConfig> step = MakeStepConfig(r);
  ASSERT_TRUE(step.ok()) << step.status().message();
  Result<RunOutcome> o = SimulateScenarioRun(r, *step, RunRequest{});
  ASSERT_TRUE(o.ok()) << o.status().message();
  ASSERT_FALSE(o->run.phases.empty());
  EXPECT_EQ(o->run.phases.front().start, sim::Time());
  EXPECT_EQ(o->run.phases.back().end, o->run.wall_time);
}

// A caller that shows no log turns it off; the run it simulates is the same one. The demo has
// stochastic failures on, so the comparison covers failures, restarts and checkpoints.
TEST(SessionTest, RunWithoutItsLogKeepsEveryNumber) {
  const ResolvedScenario r = Demo();
  Result<step::StepConfig> step = MakeStepConfig(r);
  ASSERT_TRUE(step.ok()) << step.status().message();
  Result<RunOutcome> with = SimulateScenarioRun(r, *step, RunRequest{});
  RunRequest quiet;
  quiet.keep_log = false;
  Result<RunOutcome> without = SimulateScenarioRun(r, *step, quiet);
  ASSERT_TRUE(with.ok()) << with.status().message();
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_FALSE(with->run.events.empty());
  EXPECT_TRUE(without->run.events.empty());
  EXPECT_TRUE(without->run.phases.empty());
  EXPECT_FALSE(without->config.record_events);  // the config as simulated
  ASSERT_GT(with->run.failure_records.size(), 0u);
  EXPECT_EQ(without->run.failure_records.size(), with->run.failure_records.size());
  EXPECT_EQ(without->run.wall_time, with->run.wall_time);
  EXPECT_EQ(without->run.total_steps, with->run.total_steps);
  EXPECT_EQ(without->run.steps_executed, with->run.steps_executed);
  EXPECT_EQ(without->run.steps_rolled_back, with->run.steps_rolled_back);
  EXPECT_EQ(without->run.persistent_checkpoints, with->run.persistent_checkpoints);
  EXPECT_EQ(without->run.breakdown.useful, with->run.breakdown.useful);
  EXPECT_EQ(without->run.breakdown.lost, with->run.breakdown.lost);
  EXPECT_EQ(without->run.breakdown.restart, with->run.breakdown.restart);
}

TEST(SessionTest, GpuGroupForms) {
  EXPECT_EQ(ParseGpuGroup("4", 16).value(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ParseGpuGroup("2/8", 16).value(), (std::vector<int>{0, 8}));
  EXPECT_EQ(ParseGpuGroup("0,5,9", 16).value(), (std::vector<int>{0, 5, 9}));
  EXPECT_FALSE(ParseGpuGroup("17", 16).ok());
  EXPECT_FALSE(ParseGpuGroup("0,16", 16).ok());
  EXPECT_FALSE(ParseGpuGroup("x", 16).ok());
}

// A calibration in the scenario prices the step the same way in every command: the sweep's
// problem carries it, and the what-if's baseline trains exactly as long as `run` (before, both
// ignored cluster.calibration and priced the step from the model alone). The demo trains for
// 21 days of wall time, so the steps that fit in them measure the step time.
TEST(SessionTest, SweepAndWhatIfUseTheScenarioCalibration) {
  const ResolvedScenario r = Demo({"cluster.calibration=../calibration/dgx_h100_sample.json"});
  auto problem = MakeSweepProblem(r, {}, 3e11);
  ASSERT_TRUE(problem.ok()) << problem.status().message();
  ASSERT_NE(problem->base.calibration, nullptr);
  EXPECT_TRUE(problem->base.calibration->is_sample());

  auto step = SimulateScenarioStep(r, StepRequest{});
  ASSERT_TRUE(step.ok()) << step.status().message();
  ASSERT_TRUE(step->result.calibration.used);
  RunRequest quiet;
  quiet.progress = false;
  auto run = SimulateScenarioRun(r, step->config, quiet);
  ASSERT_TRUE(run.ok()) << run.status().message();
  run::ScheduledFault gpu;
  gpu.id = 3;
  gpu.at = sim::Time::Hours(1);
  auto whatif = SimulateScenarioWhatIf(r, {gpu}, 0, 0);
  ASSERT_TRUE(whatif.ok()) << whatif.status().message();
  EXPECT_EQ(whatif->report.steps, run->run.total_steps);

  // And the calibration changes the step, so the check above can tell them apart.
  auto plain = SimulateScenarioStep(Demo(), StepRequest{});
  ASSERT_TRUE(plain.ok());
  EXPECT_NE(plain->result.time_s, step->result.time_s);
}

// `trainsim calibrate`: the runner's arguments (no GPU needed).

std::string After(const std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
}

TEST(CalibrateCommandTest, DemoLayerShapesUnderTp8) {
  auto args = CalibrateRunnerArgs(Demo(), CalibrateRequest{}, "out.json");
  ASSERT_TRUE(args.ok()) << args.status().message();
  // GPT-3 175B, TP 8, micro-batch 1, seq 2048 (T = 2048 tokens): qkv is T × 3·12288/8 × 12288,
  // its dgrad T × 12288 × 4608 and its wgrad 12288 × 4608 × T. The demo runs fused flash
  // attention, so no attention product goes through cuBLAS and none is measured.
  const std::string gemm = After(*args, "--gemm");
  EXPECT_EQ(gemm.rfind("qkv=2048x4608x12288,qkv.dgrad=2048x12288x4608,qkv.wgrad=12288x4608x2048,"
                       "attn_out=2048x12288x1536,",
                       0),
            0u)
      << gemm;
  EXPECT_EQ(gemm.find("attn_scores"), std::string::npos) << gemm;
  // fc2's forward (T × 12288 × 6144) is fc1's dgrad, and its dgrad fc1's forward: kept once.
  EXPECT_EQ(gemm.find("mlp_down="), std::string::npos) << gemm;
  EXPECT_NE(gemm.find("mlp_down.wgrad=6144x12288x2048"), std::string::npos) << gemm;
  EXPECT_EQ(After(*args, "--dtypes"), "bf16");
  EXPECT_EQ(After(*args, "--expect-gpu"), "H100-SXM-80GB");
  EXPECT_EQ(After(*args, "-o"), "out.json");
  EXPECT_EQ(After(*args, "-f"), "");  // the full nccl-tests ladder unless --quick
}

TEST(CalibrateCommandTest, UnfusedAttentionMeasuresTheBatchedProducts) {
  // Without flash attention the scores (s × s × d) and context (s × d × s) products run batched
  // over 96/8 = 12 heads per GPU, head size d = 128. The context product has the shape of the
  // scores' dgrad, so it is listed once, under the first name.
  auto args = CalibrateRunnerArgs(Demo({"model.flash_attention=false"}), {}, "o.json");
  ASSERT_TRUE(args.ok()) << args.status().message();
  const std::string gemm = After(*args, "--gemm");
  EXPECT_NE(gemm.find("attn_scores=2048x2048x128x12"), std::string::npos) << gemm;
  EXPECT_NE(gemm.find("attn_scores.dgrad=2048x128x2048x12"), std::string::npos) << gemm;
  EXPECT_EQ(gemm.find("attn_context="), std::string::npos) << gemm;
}

ResolvedScenario Load(const std::string& path) {
  auto s = LoadScenario(path, {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto r = Resolve(*s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

TEST(CalibrateCommandTest, MoeScenarioMeasuresTheExpertProductsAndTheHead) {
  // Qwen3-30B-A3B on 16 H100, EP 16, micro-batch 1 of 4,096 tokens, 128 experts, top 8: each GPU
  // holds 128/16 = 8 experts and receives 4,096 · 8 copies, 4,096 per expert (force-balanced).
  // The experts' gate+up product is 4096 × 2·768 × 2048 batched over 8, down 4096 × 2048 × 768.
  // The head's logits: 4096 × 151,936 (vocab, TP 1) × 2048. Before, only the dense layer's
  // shapes were listed, although the model has no dense layer.
  auto args = CalibrateRunnerArgs(
      Load("scenarios/validation/bridge_h100_qwen3_30b_a3b_fp8.textproto"), {}, "o.json");
  ASSERT_TRUE(args.ok()) << args.status().message();
  const std::string gemm = After(*args, "--gemm");
  // Transformer Engine runs the 8 experts' products 4 at a time (its 4 compute streams), so the
  // step prices two rounds of 4 concurrent products: a batch of 4 is what it looks up.
  EXPECT_NE(gemm.find("expert_gate_up=4096x1536x2048x4,"), std::string::npos) << gemm;
  EXPECT_NE(gemm.find("expert_down=4096x2048x768x4,"), std::string::npos) << gemm;
  EXPECT_EQ(gemm.find("x8,"), std::string::npos) << gemm;
  EXPECT_NE(gemm.find("logits=4096x151936x2048"), std::string::npos) << gemm;
}

TEST(CalibrateCommandTest, TpOverlapMeasuresTheChunksUserbuffersRun) {
  // Llama 3 70B, seq 8192, TP 4 with tp_comm_overlap: Transformer Engine's userbuffers run qkv
  // as 4 chunks of 8192/4 = 2048 rows, (64 + 2·8) heads × 128 / 4 = 2560 wide over hidden 8192.
  auto args = CalibrateRunnerArgs(Load("scenarios/validation/bridge_h100_llama3_70b_fp8.textproto"),
                                  {}, "o.json");
  ASSERT_TRUE(args.ok()) << args.status().message();
  const std::string gemm = After(*args, "--gemm");
  EXPECT_NE(gemm.find("qkv=8192x2560x8192,"), std::string::npos) << gemm;
  EXPECT_NE(gemm.find("qkv=2048x2560x8192,"), std::string::npos) << gemm;
}

// A calibration holding every shape calibrate lists replaces the model's rate for the experts
// too. GPT-OSS 120B on H100, EP 8: 16 experts per GPU of 4096 · 4 · 8 / 128 = 1024 tokens each;
// gate+up 1024 × 5760 × 2880, run 4 at a time on TE's 4 streams: 4 rounds, each a batch of 4.
// At a measured 100 TFLOP/s (far below the model's, so compute-bound) the forward takes the 16
// launches plus 4 rounds of 2 · 4 · 1024 · 5760 · 2880 FLOPs at 1e14 FLOP/s. Before, calibrate
// measured a batch of 16, which the step never looks up.
TEST(CalibrateCommandTest, CalibratedExpertProductsAreTheOnesTheStepUses) {
  ResolvedScenario r = Load("scenarios/validation/bridge_h100_gpt_oss_120b_bf16.textproto");
  auto cfg = MakeStepConfig(r);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto args = CalibrateRunnerArgs(r, {}, "o.json");
  ASSERT_TRUE(args.ok()) << args.status().message();
  std::string rows;
  std::string list = After(*args, "--gemm") + ",";
  for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
    std::string dims = list.substr(at, comma - at);
    dims = dims.substr(dims.find('=') + 1);
    int64_t v[4] = {0, 0, 0, 1};
    int i = 0;
    for (size_t s = 0, x; i < 4 && s <= dims.size(); s = x + 1, ++i) {
      x = dims.find('x', s);
      if (x == std::string::npos) x = dims.size();
      v[i] = std::stoll(dims.substr(s, x - s));
    }
    const double t = 2.0 * double(v[0]) * double(v[1]) * double(v[2]) * double(v[3]) / 1e14;
    if (!rows.empty()) rows += ",";
    rows += "{\"name\": \"x\", \"dtype\": \"bf16\", \"m\": " + std::to_string(v[0]) +
            ", \"n\": " + std::to_string(v[1]) + ", \"k\": " + std::to_string(v[2]) +
            ", \"batch\": " + std::to_string(v[3]) + ", \"time_s\": " + std::to_string(t) +
            ", \"tflops\": 100}";
  }
  const std::string text =
      "{\"format\": \"trainsim-calibration\", \"version\": 1, \"sample\": true, "
      "\"gpu_name\": \"NVIDIA H100 80GB HBM3\", \"gpu_count\": 1, \"compute_capability\": "
      "\"9.0\", \"nccl_version\": \"x\", \"cuda_version\": \"13.0\", \"date\": \"x\", "
      "\"collectives\": [], \"gemm\": [" +
      rows + "]}";
  auto cal = comm::ParseCalibration(text, "test.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  const parallelism::GemmCalibration g{&*cal, cfg->gemm_dtype};
  const auto& c = cfg->parallel;
  int found = 0;
  for (const auto& op : parallelism::LayerOps(cfg->model, c.split(), c.micro_batch, true)) {
    if (op.name != "expert_gate_up") continue;
    ++found;
    ASSERT_EQ(op.batch, 16);
    ASSERT_EQ(op.m, 1024);
    const double expected =
        16 * cfg->compute.kernel_overhead_s + 4 * (2.0 * 4 * 1024 * 5760 * 2880) / 1e14;
    EXPECT_NEAR(parallelism::OpTimeSeconds(cfg->gpu, cfg->compute, op, true, &g), expected,
                1e-9 * expected);
  }
  EXPECT_EQ(found, 1);
}

TEST(CalibrateCommandTest, ContextParallelLayoutMeasuresItsShareOfTheSequence) {
  // Llama 3.1 405B, seq 8192, TP 8, CP 2: each GPU runs 8192/2 = 4096 tokens through qkv, whose
  // width is (128 + 2·8) heads × 128 / 8 = 2304 over hidden 16,384. Before, the CP split was
  // dropped and 8192 tokens were measured.
  auto args = CalibrateRunnerArgs(
      Load("scenarios/validation/bridge_h100_llama31_405b_fp8.textproto"), {}, "o.json");
  ASSERT_TRUE(args.ok()) << args.status().message();
  const std::string gemm = After(*args, "--gemm");
  EXPECT_EQ(gemm.rfind("qkv=4096x2304x16384,", 0), 0u) << gemm;
}

// What calibrate measures is what the step simulation looks up: on every bundled scenario the
// runner's --gemm list has exactly the shapes the step counts in its calibration coverage.
TEST(CalibrateCommandTest, MeasuresExactlyTheShapesTheStepLooksUp) {
  int scenarios = 0;
  for (const char* dir : {"scenarios/examples", "scenarios/validation"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string path = entry.path().string();
      if (entry.path().extension() != ".textproto") continue;
      auto s = LoadScenario(path, {});
      ASSERT_TRUE(s.ok()) << path << ": " << s.status().message();
      auto r = Resolve(*s);
      ASSERT_TRUE(r.ok()) << path << ": " << r.status().message();
      auto cfg = MakeStepConfig(*r);
      ASSERT_TRUE(cfg.ok()) << path << ": " << cfg.status().message();
      const auto ops = step::PricedGemmOps(*cfg);
      auto args = CalibrateRunnerArgs(*r, {}, "o.json");
      if (s->model().precision() == pb::FP4) {
        // The NVFP4 validation rows: the runner has no FP4 products, so calibrate refuses them
        // with a user error instead of measuring the wrong precision.
        ASSERT_FALSE(args.ok()) << path;
        EXPECT_NE(args.status().message().find("calibration measures bf16, fp16 and fp8"),
                  std::string::npos)
            << path;
        continue;
      }
      ASSERT_TRUE(args.ok()) << path << ": " << args.status().message();
      const std::string gemm = After(*args, "--gemm");
      const size_t listed = size_t(std::count(gemm.begin(), gemm.end(), ',')) + 1;
      EXPECT_EQ(
          listed,
          size_t(parallelism::CountCalibratedGemms(cfg->gpu, cfg->compute, nullptr, ops).shapes))
          << path;
      for (const comm::GemmShape& g : parallelism::GemmShapesOf(ops)) {
        std::string want = g.name + "=" + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                           std::to_string(g.k);
        if (g.batch != 1) want += "x" + std::to_string(g.batch);
        EXPECT_NE(gemm.find(want), std::string::npos) << path << ": " << want;
      }
      ++scenarios;
    }
  }
  EXPECT_GE(scenarios, 10);
}

// An FP8 model's products that stay in BF16 are timed from calibrate's bf16 rows, not its fp8
// ones. Qwen3-30B-A3B FP8 on H100: Megatron's output layer is not a TE module and runs in BF16;
// the logits forward is 4096 × 151,936 × 2048. With the bf16 row at 100 TFLOP/s and the fp8 row
// at 1,000, it takes its one launch plus 2 · 4096 · 151936 · 2048 FLOPs at 1e14 FLOP/s. Before,
// every product of an FP8 model was looked up in the fp8 rows.
TEST(CalibrateCommandTest, Fp8ModelsBf16ProductsUseTheBf16Rows) {
  ResolvedScenario r = Load("scenarios/validation/bridge_h100_qwen3_30b_a3b_fp8.textproto");
  auto cfg = MakeStepConfig(r);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  ASSERT_EQ(cfg->gemm_dtype, "fp8");
  auto row = [](const char* dtype, double tflops) {
    const double t = 2.0 * 4096 * 151936 * 2048 / (tflops * 1e12);
    return std::string("{\"name\": \"logits\", \"dtype\": \"") + dtype +
           "\", \"m\": 4096, \"n\": 151936, \"k\": 2048, \"batch\": 1, \"time_s\": " +
           std::to_string(t) + ", \"tflops\": " + std::to_string(tflops) + "}";
  };
  const std::string text =
      "{\"format\": \"trainsim-calibration\", \"version\": 1, \"sample\": true, "
      "\"gpu_name\": \"NVIDIA H100 80GB HBM3\", \"gpu_count\": 1, \"compute_capability\": "
      "\"9.0\", \"nccl_version\": \"x\", \"cuda_version\": \"13.0\", \"date\": \"x\", "
      "\"collectives\": [], \"gemm\": [" +
      row("bf16", 100) + "," + row("fp8", 1000) + "]}";
  auto cal = comm::ParseCalibration(text, "test.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  const parallelism::GemmCalibration g{&*cal, cfg->gemm_dtype};
  const auto& c = cfg->parallel;
  int found = 0;
  for (const auto& op : parallelism::HeadOps(cfg->model, c.split(), c.micro_batch)) {
    if (op.name != "logits") continue;
    ++found;
    const double expected =
        op.fwd_kernels * cfg->compute.kernel_overhead_s + 2.0 * 4096 * 151936 * 2048 / 1e14;
    EXPECT_NEAR(parallelism::OpTimeSeconds(cfg->gpu, cfg->compute, op, true, &g), expected,
                1e-6 * expected);
  }
  EXPECT_EQ(found, 1);
}

TEST(CalibrateCommandTest, PrecisionChoosesTheGemmTypes) {
  auto fp8 = CalibrateRunnerArgs(Demo({"model.precision=FP8"}), CalibrateRequest{}, "o.json");
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  EXPECT_EQ(After(*fp8, "--dtypes"), "fp8,bf16");
  auto tf32 = CalibrateRunnerArgs(Demo({"model.precision=TF32"}), CalibrateRequest{}, "o.json");
  ASSERT_FALSE(tf32.ok());
  EXPECT_NE(tf32.status().message().find("TF32"), std::string::npos);
}

TEST(CalibrateCommandTest, QuickAndNranksAreForwarded) {
  CalibrateRequest o;
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

// A LINK fault with its default degrade (1: the link is down) passed `check` and failed `run`
// with "the step never completed": the step was simulated over a link of bandwidth 0. A link
// that is down takes its node out of the job (a NIC failure in the run), so the step keeps
// every link it can use and the run completes.
TEST(SessionTest, LinkFaultWithDefaultDegradeRunsAsANicFailure) {
  const ResolvedScenario r = Demo({"faults.0.kind=LINK", "faults.0.id=1", "faults.0.at=1h"});
  ASSERT_EQ(r.scenario.faults(0).degrade(), 1.0);
  EXPECT_TRUE(MakeFaultedClusterState(r).links.empty());
  Result<step::StepConfig> step = MakeStepConfig(r);
  ASSERT_TRUE(step.ok()) << step.status().message();
  Result<StepOutcome> s = SimulateScenarioStep(r, StepRequest{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  Result<RunOutcome> o = SimulateScenarioRun(r, *step, RunRequest{});
  ASSERT_TRUE(o.ok()) << o.status().message();
}

// --fail takes failures: a slowdown factor ("gpu:5x2@1h") silently became a straggler, and a
// duration on a failure ("gpu:5@1h+1h") was accepted and ignored.
TEST(SessionTest, FailRefusesSlowdownsAndDurations) {
  const ResolvedScenario r = Demo();
  auto slow = ParseAddedFaults(r, {"gpu:5x2@1h"}, {});
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.status().message().find("give it with --slow"), std::string::npos)
      << slow.status().message();
  auto lasting = ParseAddedFaults(r, {"gpu:5@1h+1h"}, {});
  ASSERT_FALSE(lasting.ok());
  EXPECT_NE(lasting.status().message().find("a GPU fault has no duration"), std::string::npos)
      << lasting.status().message();
  EXPECT_TRUE(ParseAddedFaults(r, {"gpu:5@1h", "link:3@1h"}, {"gpu:5x2@1h+1h"}).ok());
}

}  // namespace
}  // namespace trainsim::scenarios
