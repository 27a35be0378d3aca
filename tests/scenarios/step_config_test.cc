#include "scenarios/step_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>

#include "parallelism/model.h"
#include "parallelism/roofline.h"
#include "scenarios/scenario.h"
#include "scenarios/session.h"
#include "step/comm_sm_share.h"

namespace trainsim::scenarios {
namespace {

constexpr char kScenario[] = R"pb(
  name: "t"
  cluster { gpu: "H100-SXM-80GB" node_type: "DGX-H100" nodes: 4 nic: "NDR-400" nics_per_node: 8 }
  model {
    layers: 32
    hidden: 4096
    heads: 32
    seq_len: 4096
    vocab: 51200
    precision: BF16
    flash_attention: false
  }
  parallelism {
    tp: 4
    pp: 2
    dp: 4
    micro_batch: 2
    global_batch: 64
    virtual_stages: 2
    recompute: SELECTIVE
    sequence_parallel: true
    zero_stage: 1
  }
  training { steps: 10 }
  faults { kind: STRAGGLER id: 9 at: "1h" slowdown: 1.5 }
  faults { kind: LINK id: 3 at: "2h" degrade: 0.25 }
)pb";

// `s` resolved and mapped onto the step simulation's configuration.
Result<step::StepConfig> StepConfigOf(const pb::Scenario& s) {
  Result<ResolvedScenario> r = Resolve(s);
  if (!r.ok()) return r.status();
  return MakeStepConfig(*r);
}

// parallelism.grad_reduce_in_fp32 (Megatron's --grad-reduce-in-bf16 /
// --accumulate-allreduce-grads-in-fp32): 16-bit main gradients are 2 bytes in the buffer and
// on the wire, and the optimizer stepping fp32 master weights copies its shard's gradients to
// fp32 (4 bytes); fp32 main gradients are 4 bytes and need no copy — either way round, for
// bf16 and fp16 alike.
TEST(StepConfigTest, GradReduceInFp32SetsTheMainGradientBytesAndTheStepCopies) {
  struct Case {
    pb::Precision precision;
    bool fp32;
    double grad, step_copy;
  };
  for (const Case& k : {Case{pb::BF16, false, 2, 4}, Case{pb::BF16, true, 4, 0},
                        Case{pb::FP8, false, 2, 4}, Case{pb::FP16, true, 4, 0}}) {
    Result<pb::Scenario> s = ParseScenarioText(kScenario, "t.textproto");
    ASSERT_TRUE(s.ok()) << s.status().message();
    s->mutable_model()->set_precision(k.precision);
    s->mutable_parallelism()->set_grad_reduce_in_fp32(k.fp32);
    Result<step::StepConfig> c = StepConfigOf(*s);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_DOUBLE_EQ(c->memory.grad_bytes_per_param, k.grad) << k.precision << k.fp32;
    EXPECT_DOUBLE_EQ(c->memory.step_grad_bytes_per_param, k.step_copy) << k.precision << k.fp32;
  }
}

TEST(StepConfigTest, MapsScenarioOntoStepSimulationConfig) {
  Result<pb::Scenario> s = ParseScenarioText(kScenario, "t.textproto");
  ASSERT_TRUE(s.ok()) << s.status().message();
  Result<ResolvedScenario> r = Resolve(*s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Result<step::StepConfig> c = MakeStepConfig(*r);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->model.num_layers, 32);
  EXPECT_EQ(c->model.seq_len, 4096);
  EXPECT_FALSE(c->model.flash_attention);
  EXPECT_EQ(c->parallel.tp, 4);
  EXPECT_EQ(c->parallel.pp, 2);
  EXPECT_EQ(c->parallel.dp, 4);
  EXPECT_EQ(c->parallel.schedule, parallelism::PipelineSchedule::kInterleaved1F1B);
  EXPECT_EQ(c->parallel.virtual_stages, 2);
  EXPECT_EQ(c->parallel.recompute, parallelism::Recompute::kSelective);
  EXPECT_TRUE(c->parallel.sequence_parallel);
  EXPECT_EQ(c->parallel.zero_stage, 1);
  // Megatron-LM: bf16 accumulates and reduces gradients in fp32; fp16 keeps fp16 gradients and
  // copies them to fp32 at the optimizer step. Pipeline sends block (overlap_p2p_comm unset).
  EXPECT_DOUBLE_EQ(c->memory.grad_bytes_per_param, 4);
  EXPECT_DOUBLE_EQ(c->memory.step_grad_bytes_per_param, 0);
  EXPECT_FALSE(c->parallel.overlap_p2p);
  {
    // Precision in the text, so that the defaults (grad_reduce_in_fp32) follow it.
    std::string text = kScenario;
    const std::string bf16 = "precision: BF16";
    text.replace(text.find(bf16), bf16.size(), "precision: FP16");
    Result<pb::Scenario> fp16 = ParseScenarioText(text, "t.textproto");
    ASSERT_TRUE(fp16.ok()) << fp16.status().message();
    fp16->mutable_parallelism()->set_overlap_p2p_comm(true);
    Result<step::StepConfig> c16 = StepConfigOf(*fp16);
    ASSERT_TRUE(c16.ok()) << c16.status().message();
    EXPECT_DOUBLE_EQ(c16->memory.grad_bytes_per_param, 2);
    EXPECT_DOUBLE_EQ(c16->memory.step_grad_bytes_per_param, 4);
    EXPECT_TRUE(c16->parallel.overlap_p2p);
  }
  // H100 SXM datasheet: 989.4 dense BF16 TFLOP/s, 3.35 TB/s, 132 SMs, NVLink 450 GB/s/dir.
  EXPECT_DOUBLE_EQ(c->gpu.peak_flops, 989.4e12);
  EXPECT_DOUBLE_EQ(c->gpu.hbm_bytes_per_s, 3350e9);
  EXPECT_EQ(c->gpu.num_sms, 132);
  EXPECT_EQ(c->topology.nodes, 4);
  EXPECT_EQ(c->topology.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(c->topology.nic_Gbps, 400);
  EXPECT_DOUBLE_EQ(c->topology.nvlink_GBps, 450);
  const step::ClusterState st = MakeFaultedClusterState(*r);
  ASSERT_EQ(st.gpu_slowdown.size(), 1u);
  EXPECT_EQ(st.gpu_slowdown[0].first, 9);
  EXPECT_DOUBLE_EQ(st.gpu_slowdown[0].second, 1.5);
  ASSERT_EQ(st.links.size(), 2u);  // both directions of NIC 3's cable
  EXPECT_DOUBLE_EQ(st.links[0].bandwidth_factor, 0.75);

  Result<step::StepResult> healthy = step::SimulateStep(*c);
  ASSERT_TRUE(healthy.ok()) << healthy.status().message();
  Result<step::StepResult> faulted = step::SimulateStep(*c, st);
  ASSERT_TRUE(faulted.ok()) << faulted.status().message();
  EXPECT_GT(faulted->time_s, healthy->time_s);
}

// Host memory behind PCIe Gen5 x16 (64 GB/s per direction), no copy efficiency given: all of
// it both ways. A Grace superchip copies over its share of NVLink-C2C at the fractions measured
// on a GH200 (297 and 375 of 450 GB/s, Schieffer et al. 2024): GB200's 225 GB/s at 0.66 out and
// 0.83 in.
TEST(StepConfigTest, OffloadCopiesTakeTheGpusHostLinkAtItsMeasuredRatePerDirection) {
  Result<pb::Scenario> s = ParseScenarioText(kScenario, "t.textproto");
  ASSERT_TRUE(s.ok()) << s.status().message();
  Result<step::StepConfig> c = StepConfigOf(*s);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->host_d2h_Bps, 64e9);
  EXPECT_DOUBLE_EQ(c->host_h2d_Bps, 64e9);

  std::string text = kScenario;
  const std::string dgx = R"(gpu: "H100-SXM-80GB" node_type: "DGX-H100" nodes: 4)";
  text.replace(text.find(dgx), dgx.size(), R"(gpu: "GB200" node_type: "GB200-NVL72" nodes: 1)");
  text.replace(text.find("dp: 4"), 5, "dp: 9");
  text.replace(text.find("global_batch: 64"), 16, "global_batch: 72");
  Result<pb::Scenario> gb = ParseScenarioText(text, "t.textproto");
  ASSERT_TRUE(gb.ok()) << gb.status().message();
  Result<step::StepConfig> cg = StepConfigOf(*gb);
  ASSERT_TRUE(cg.ok()) << cg.status().message();
  EXPECT_NEAR(cg->host_d2h_Bps, 225e9 * 297 / 450, 1e9);
  EXPECT_NEAR(cg->host_h2d_Bps, 225e9 * 375 / 450, 1e9);
}

// parallelism.moe_token_dispatcher reaches the layer model, with the nodes an EP group spans:
// Megatron-Core's expert groups take etp · ep consecutive ranks, 8 per DGX H100 node.
TEST(StepConfigTest, MoeDispatcherAndTheNodesOfAnEpGroupReachTheLayerSplit) {
  constexpr char kMoe[] = R"pb(
    name: "moe"
    cluster { gpu: "H100-SXM-80GB" node_type: "DGX-H100" nodes: 2 nic: "NDR-400" nics_per_node: 8 }
    model { preset: "qwen3-30b-a3b" seq_len: 4096 precision: BF16 }
    parallelism { ep: 16 micro_batch: 1 global_batch: 64 moe_token_dispatcher: FLEX }
    training { steps: 1 }
  )pb";
  Result<pb::Scenario> s = ParseScenarioText(kMoe, "moe.textproto");
  ASSERT_TRUE(s.ok()) << s.status().message();
  Result<step::StepConfig> c = StepConfigOf(*s);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->parallel.split().dispatcher, parallelism::MoeDispatcher::kFlex);
  EXPECT_EQ(c->parallel.split().ep_nodes, 2);  // 16 ranks over 8-GPU nodes
  EXPECT_TRUE(c->parallel.moe_delay_wgrad);    // --delay-wgrad-compute unless turned off
  s->mutable_parallelism()->set_moe_delay_wgrad(false);
  EXPECT_FALSE(StepConfigOf(*s)->parallel.moe_delay_wgrad);
  s->mutable_parallelism()->set_ep(4);
  s->mutable_parallelism()->clear_moe_token_dispatcher();
  Result<step::StepConfig> c4 = StepConfigOf(*s);
  ASSERT_TRUE(c4.ok()) << c4.status().message();
  EXPECT_EQ(c4->parallel.split().dispatcher, parallelism::MoeDispatcher::kAllToAll);  // default
  EXPECT_EQ(c4->parallel.split().ep_nodes, 1);
}

// The published rows (scenarios/validation/, values from the papers' tables) under one set of
// documented parameters, run exactly as the bundled scenario files say (each states that its run
// predates FlashAttention and Megatron's overlapped gradient reduction).
std::vector<ValidationRow> RunRows(const std::vector<std::string>& prefixes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("trainsim_validation_" + prefixes[0]);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator("scenarios/validation")) {
    const std::string name = e.path().filename().string();
    for (const std::string& p : prefixes) {
      if (name.rfind(p, 0) == 0 || name == "published.csv") {
        fs::copy_file(e.path(), dir / name, fs::copy_options::overwrite_existing);
      }
    }
  }
  Result<std::vector<ValidationRow>> rows = RunValidation(dir.string(), {});
  fs::remove_all(dir);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? *rows : std::vector<ValidationRow>{};
}

double Mape(const std::vector<ValidationRow>& rows) {
  double sum = 0;
  for (const ValidationRow& r : rows) sum += std::fabs(r.error);
  return rows.empty() ? 1.0 : sum / rows.size();
}

TEST(ValidationTest, RecomputeIterationTimesWithinTenPercent) {
  const auto rows = RunRows({"recompute2022_"});
  ASSERT_EQ(rows.size(), 4u);  // 22B and 530B, full recompute and SP + selective
  for (const ValidationRow& r : rows) {
    EXPECT_EQ(r.metric, "iteration_time_s");
    EXPECT_LT(std::fabs(r.error), 0.10) << r.scenario << " " << r.predicted;
  }
  EXPECT_LE(Mape(rows), 0.10);
}

TEST(ValidationTest, MegatronWeakScalingWithinTenPercentMape) {
  const auto rows = RunRows({"megatron2021_"});
  ASSERT_EQ(rows.size(), 5u);
  for (const ValidationRow& r : rows) {
    EXPECT_EQ(r.metric, "tflops_per_gpu");
    EXPECT_TRUE(r.micro_batch_searched);
    EXPECT_LT(std::fabs(r.error), 0.20) << r.scenario << " " << r.predicted;
  }
  EXPECT_LE(Mape(rows), 0.10);
}

// The Megatron-Bridge DGX-H100 rows: each loads, runs as published (the micro-batch is
// published) and is compared on tokens/s per GPU. The bound is a sanity bound (a factor of 2 of
// the published figure), not the accuracy target: docs/validation.md reports the errors.
TEST(ValidationTest, HopperRowsPredictTokensPerGpuWithinAFactorOfTwo) {
  const auto rows = RunRows({"bridge_h100_"});
  // Llama 3 70B, 3.1 405B, Qwen3 30B-A3B, 235B-A22B, GPT-OSS 120B, Nemotron 3 Nano
  ASSERT_EQ(rows.size(), 6u);
  for (const ValidationRow& r : rows) {
    EXPECT_EQ(r.source, "Megatron-Bridge DGX-H100 performance summary");
    EXPECT_EQ(r.metric, "tokens_per_sec_per_gpu");
    EXPECT_FALSE(r.micro_batch_searched);
    EXPECT_EQ(r.micro_batch, 1);  // every row publishes mbs 1
    EXPECT_GT(r.predicted, r.published / 2) << r.scenario;
    EXPECT_LT(r.predicted, r.published * 2) << r.scenario;
    EXPECT_GT(r.model_tflops_published, 0) << r.scenario;
    EXPECT_GT(r.model_tflops_predicted, 0) << r.scenario;
    EXPECT_NEAR(r.error, r.predicted / r.published - 1, 1e-12);
  }
}

// The held-out Megatron-Bridge Blackwell rows
// (docs/evidence/megatron_bridge_blackwell_pretrain.csv): every row loads, runs with its published
// micro-batch and is reported in a table of its own, apart from the H100 rows. As for the H100
// rows, the bound is a sanity bound (a factor of 2), not an accuracy target; docs/validation.md
// reports and explains each row's error.
TEST(ValidationTest, BlackwellRowsFormTheirOwnTableWithinAFactorOfTwo) {
  const auto rows = RunRows({"bridge_b200_", "bridge_b300_", "bridge_gb200_", "bridge_gb300_"});
  // Llama 3 70B and 3.1 405B in FP8, MXFP8 and NVFP4 on GB200 and GB300 (12); Qwen3 30B-A3B,
  // Qwen3 235B-A22B, GPT-OSS 120B and Nemotron 3 Nano on each of the four systems (16).
  ASSERT_EQ(rows.size(), 28u);
  for (const ValidationRow& r : rows) {
    EXPECT_EQ(r.source, "Megatron-Bridge DGX-B200/B300/GB200/GB300 performance summary");
    EXPECT_EQ(r.metric, "tokens_per_sec_per_gpu");
    EXPECT_FALSE(r.micro_batch_searched) << r.scenario;
    EXPECT_GT(r.predicted, r.published / 2) << r.scenario;
    EXPECT_LT(r.predicted, r.published * 2) << r.scenario;
    EXPECT_GT(r.model_tflops_published, 0) << r.scenario;
  }
}

// A GB200/GB300 job of 256 GPUs sits in four NVL72 racks of 64 GPUs each (the launcher's Slurm
// segment of 16 four-GPU trays): its TP and EP groups stay inside one 72-GPU NVLink domain.
TEST(ValidationTest, RackScaleRowsRunInSeventyTwoGpuNvlinkDomains) {
  for (const char* name : {"bridge_gb200_qwen3_235b_a22b_mxfp8", "bridge_gb300_llama31_405b_fp8"}) {
    Result<pb::Scenario> s =
        LoadScenario(std::string("scenarios/validation/") + name + ".textproto");
    ASSERT_TRUE(s.ok()) << s.status().message();
    Result<ResolvedScenario> r = Resolve(*s);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->node.gpus_per_node(), 72) << name;  // the rack's NVLink domain
    EXPECT_EQ(r->gpus_per_node, 64) << name;
    EXPECT_EQ(r->nodes, 4) << name;
    EXPECT_EQ(r->num_gpus, 256) << name;
  }
}

// tokens/s per GPU is global batch · sequence over step time and GPUs: Llama 3 70B's row runs
// 256 sequences of 8192 tokens on 64 GPUs, 32768 tokens per GPU per step.
TEST(ValidationTest, TokensPerGpuIsTheStepsTokensOverStepTimeAndGpus) {
  const auto rows = RunRows({"bridge_h100_llama3_70b"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].predicted * rows[0].step_time_s, 256.0 * 8192 / 64, 1e-6);
  // Model TFLOP/s and tokens/s share the step time: their ratio is FLOPs per token, which does
  // not depend on the prediction (Megatron's count for Llama 3 70B at seq 8192: about 6 · 70.6e9
  // parameters + attention ≈ 0.43–0.46 TFLOP per token).
  const double flop_per_token = rows[0].model_tflops_predicted * 1e12 / rows[0].predicted;
  EXPECT_GT(flop_per_token, 0.42e12);
  EXPECT_LT(flop_per_token, 0.47e12);
}

TEST(ValidationTest, PublishedTableRejectsANonNumericThroughput) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "trainsim_validation_badcsv";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file("scenarios/validation/bridge_h100_llama3_70b_fp8.textproto",
                dir / "bridge_h100_llama3_70b_fp8.textproto");
  std::ofstream(dir / "published.csv")
      << "scenario,micro_batch_published,tokens_per_sec_per_gpu,model_tflops_per_sec_per_gpu\n"
      << "bridge_h100_llama3_70b_fp8,true,n/a,731\n";
  Result<std::vector<ValidationRow>> rows = RunValidation(dir.string(), {});
  fs::remove_all(dir);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("'n/a' is not a positive number"), std::string::npos)
      << rows.status().message();
}

// A check scenario's step as `trainsim run` simulates it (SimulateScenarioStep), with the
// resolved scenario; nullopt, with a failed expectation, when any stage refuses it.
struct SimulatedCheck {
  ResolvedScenario resolved;
  StepOutcome step;
};
std::optional<SimulatedCheck> SimulateCheck(const pb::Scenario& scenario) {
  Result<ResolvedScenario> r = Resolve(scenario);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return std::nullopt;
  Result<StepOutcome> step = SimulateScenarioStep(*r, {});
  EXPECT_TRUE(step.ok()) << step.status().message();
  if (!step.ok()) return std::nullopt;
  return SimulatedCheck{std::move(r.value()), std::move(step.value())};
}

// Out of sample (not a validation row): Mixtral 8x7B on 64 H100 in the Megatron-Core MoE
// README's reference mapping, published 468 model TFLOP/s per GPU (MCore v0.9), in Megatron-
// Core's FLOP count. At the scenario's default load imbalance the model is within 10% of it; the
// check depends on that unpublished balance (a perfectly balanced router is faster).
TEST(ValidationTest, MixtralOutOfSampleCheckIsWithinTenPercentOfTheReadme) {
  Result<pb::Scenario> s = LoadScenario("scenarios/validation/checks/mixtral_8x7b_h100.textproto");
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto tflops = [](const pb::Scenario& sc) {
    const std::optional<SimulatedCheck> s = SimulateCheck(sc);
    if (!s) return 0.0;
    const step::StepConfig& c = s->step.config;
    return parallelism::MegatronModelFlopsPerIteration(c.model, c.parallel.global_batch) /
           (s->step.result.time_s * double(s->resolved.num_gpus)) / 1e12;
  };
  const double predicted = tflops(*s);
  EXPECT_LT(std::fabs(predicted / 468 - 1), 0.10) << predicted;
  pb::Scenario balanced = *s;
  balanced.mutable_model()->mutable_moe()->set_load_imbalance(1.0);
  EXPECT_GT(tflops(balanced), predicted);
}

// Out of sample (not a validation row): Qwen3 235B-A22B BF16 on 256 H100 in the layout of the
// Bridge FP8 row, as the Megatron-Core MoE report (arXiv:2603.07685, Tables 11 and 20) measured
// it: 2,132 tokens/s per GPU. The report does not name its H100 dispatcher; with the Bridge
// recipe's all-to-all the model is within 10% of the measurement. DeepEP (FLEX) sends less
// across the NICs, so the model with it must be faster still.
TEST(ValidationTest, Qwen3MoeReportRowIsWithinTenPercentWithTheRecipesDispatcher) {
  Result<pb::Scenario> s =
      LoadScenario("scenarios/validation/checks/mcore_moe_report_qwen3_235b_bf16_h100.textproto");
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto tokens_per_gpu = [](const pb::Scenario& sc) {
    const std::optional<SimulatedCheck> s = SimulateCheck(sc);
    if (!s) return 0.0;
    const step::StepConfig& c = s->step.config;
    return double(c.parallel.global_batch) * double(c.model.seq_len) /
           (s->step.result.time_s * double(s->resolved.num_gpus));
  };
  const double predicted = tokens_per_gpu(*s);
  EXPECT_LT(std::fabs(predicted / 2132 - 1), 0.10) << predicted;
  pb::Scenario flex = *s;
  flex.mutable_parallelism()->set_moe_token_dispatcher(pb::Parallelism::FLEX);
  EXPECT_GT(tokens_per_gpu(flex), predicted);
}

// Out of sample (not a validation row): Megatron-Bridge's controlled A/B of EP overlap on Qwen3
// 30B-A3B, BF16, 16 H100, EP 16, HybridEP (skills/nemo-mbridge-perf-moe-comm-overlap/card.yaml):
// 24.7138 s per step with the overlap off, 20.9920 s with `overlap_moe_expert_parallel_comm` on
// and delayed wgrad off, 3.72 s saved. The model hides every all-to-all of this layout under its
// paired compute (each is shorter), so what the overlap saves is the exposed EP time without
// it, less the slowdown of the compute by the communication kernels' SMs: HybridEP's 32 of the
// H100's 132 for the hidden time (step/comm_sm_share.h). It saves more than the run measured
// (docs/validation.md, session 30: no host synchronisation breaks the model's overlap).
TEST(ValidationTest, EpOverlapOnQwen3ThirtyBHidesTheAllToAllsAtTheCostOfTheirSmShare) {
  Result<pb::Scenario> s =
      LoadScenario("scenarios/validation/checks/bridge_skill_qwen3_30b_a3b_bf16_h100.textproto");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_FALSE(s->parallelism().moe_a2a_overlap());
  const std::optional<SimulatedCheck> off = SimulateCheck(*s);
  pb::Scenario overlapped = *s;
  overlapped.mutable_parallelism()->set_moe_a2a_overlap(true);
  overlapped.mutable_parallelism()->set_moe_delay_wgrad(false);
  const std::optional<SimulatedCheck> on = SimulateCheck(overlapped);
  ASSERT_TRUE(off && on);
  const step::StepBreakdown& b_off = off->step.result.breakdown;
  const step::StepBreakdown& b_on = on->step.result.breakdown;
  const double exposed_off = b_off.exposed_ep_comm_s;
  ASSERT_GT(exposed_off, 1.0);
  EXPECT_LT(b_on.exposed_ep_comm_s, 1e-3 * exposed_off);
  // HybridEP's 32 SMs (the scenario's moe_flex_sms, as the recipe) of the H100's 132.
  const step::StepConfig& c = on->step.config;
  ASSERT_EQ(step::FlexSms(c.parallel.moe_flex_sms, c.parallel.ep_nodes), 32);
  ASSERT_EQ(c.gpu.num_sms, 132);
  const double share = 32.0 / 132;
  const double slowed = b_on.compute_slowed_s - b_off.compute_slowed_s;
  EXPECT_NEAR(slowed, exposed_off * share, 0.02 * exposed_off * share);
  const double saved = off->step.result.time_s - on->step.result.time_s;
  EXPECT_NEAR(saved, exposed_off * (1 - share), 0.02 * exposed_off);
  // The model's overlap is optimistic (no host synchronisation breaks it): it saves more than
  // the run did. Should a change make it save less, docs/validation.md's account must change.
  EXPECT_GT(saved, 24.7138 - 20.9920);
}

// Out of sample (not validation rows): torchtitan's FSDP2 runs on 64 A100 (docs/performance.md,
// 2024-04; the scenarios' comments give the rows and what was assumed). torchtitan runs a
// plain-torch Llama eagerly with PyTorch's SDPA. Written that way (`kernels: EAGER` or
// EAGER_FUSED_NORM, as each model's train config sets its norm; model.cc's op-by-op byte
// counts) the model must land within 20% of each published rate and nearer to it than the same
// layout with fused kernels, which must be faster (fusing only removes HBM passes).
TEST(ValidationTest, TorchtitanFsdpA100RowsAreNearerWithEagerKernelsAndWithinTwentyPercent) {
  const struct {
    const char* path;
    double published;  // tokens/s per GPU
  } rows[] = {
      {"scenarios/validation/checks/torchtitan_llama2_13b_fsdp_a100.textproto", 2162},
      {"scenarios/validation/checks/torchtitan_llama3_8b_fsdp_a100.textproto", 2904},
      {"scenarios/validation/checks/torchtitan_llama3_70b_fsdp_a100.textproto", 331},
  };
  auto tokens_per_gpu = [](const pb::Scenario& sc) {
    const std::optional<SimulatedCheck> s = SimulateCheck(sc);
    if (!s) return 0.0;
    const step::StepConfig& c = s->step.config;
    return double(c.parallel.global_batch) * double(c.model.seq_len) /
           (s->step.result.time_s * double(s->resolved.num_gpus));
  };
  for (const auto& row : rows) {
    Result<pb::Scenario> s = LoadScenario(row.path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_NE(s->model().kernels(), pb::Model::FUSED) << row.path;
    const double eager = tokens_per_gpu(*s);
    EXPECT_LT(std::fabs(eager / row.published - 1), 0.20) << row.path << ": " << eager;
    pb::Scenario fused = *s;
    fused.mutable_model()->set_kernels(pb::Model::FUSED);
    const double fused_rate = tokens_per_gpu(fused);
    EXPECT_GT(fused_rate, eager) << row.path;
    EXPECT_LT(std::fabs(eager / row.published - 1), std::fabs(fused_rate / row.published - 1))
        << row.path;
  }
}

// Out of sample (not validation rows): one MoE layer forward and backward on 8 H100, EP 8, as
// Megatron-LM's moe_perf test times it (baseline.json, BF16; the scenarios' comments give the
// source): the layer's own ops (router, dispatcher metadata, permutation, experts, shared
// experts: what the "moe" recompute module re-runs) and its EP all-to-alls per layer and
// micro-batch, against the published milliseconds of the dispatcher the model stands for (FLEX:
// HybridEP, which the H100 recipes run). At these large shapes the model is slower than measured,
// by up to 30%, the DeepSeek proxy under FLEX by up to 35%: the gap was 38% for the DeepSeek proxy
// under FLEX before DeepEP/HybridEP's per-rank deduplication inside a node, 29% after it, and 32%
// since FLEX is priced at HybridEP's kernel rate (step/flex_dispatch.h: its all-to-alls take 1/0.9
// of comm's). What exceeds the measured layer there is the model's compute (its ops alone take more
// than the whole measured layer), not the all-to-alls (15.0 ms of ops against 14.2 ms measured in
// all).
double MoeLayerMs(const std::string& path, pb::Parallelism::MoeTokenDispatcher dispatcher) {
  Result<pb::Scenario> s = LoadScenario(path);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return 0;
  s->mutable_parallelism()->set_moe_token_dispatcher(dispatcher);
  const std::optional<SimulatedCheck> sim = SimulateCheck(*s);
  if (!sim) return 0;
  const step::StepConfig* c = &sim->step.config;
  const step::StepResult* res = &sim->step.result;
  double ops_s = 0;
  const parallelism::GemmCalibration cal{c->calibration.get(), c->gemm_dtype};
  // The MoELayer's own ops are those its "moe" recompute module re-runs (AppendMoe tags them).
  for (const parallelism::KernelOp& op :
       parallelism::LayerOps(c->model, c->parallel.split(), c->parallel.micro_batch, true)) {
    if ((op.recomputed_by & parallelism::kRecomputeMoe) == 0) continue;
    for (bool forward : {true, false}) {
      ops_s += parallelism::RooflineOf(c->gpu, c->compute, op, forward, &cal).time_s;
    }
  }
  const double layer_passes = double(c->model.num_layers) * double(c->parallel.num_micro_batches());
  return 1e3 * (ops_s + res->breakdown.exposed_ep_comm_s / layer_passes);
}

TEST(ValidationTest,
     MoePerfLayersOnH100AreWithinThirtyPercentOfMegatronsBaselineTheFlexDeepSeekProxyThirtyFive) {
  const std::string ds = "scenarios/validation/checks/moe_perf_deepseek_proxy_h100.textproto";
  const std::string mx = "scenarios/validation/checks/moe_perf_mixtral_proxy_h100.textproto";
  const double ds_a2a = MoeLayerMs(ds, pb::Parallelism::ALLTOALL);
  const double ds_flex = MoeLayerMs(ds, pb::Parallelism::FLEX);
  const double mx_a2a = MoeLayerMs(mx, pb::Parallelism::ALLTOALL);
  const double mx_flex = MoeLayerMs(mx, pb::Parallelism::FLEX);
  EXPECT_LT(std::fabs(ds_a2a / (7.119 + 10.483) - 1), 0.30) << ds_a2a;
  EXPECT_LT(std::fabs(ds_flex / (5.391 + 8.795) - 1), 0.35) << ds_flex;  // see above
  EXPECT_LT(std::fabs(mx_a2a / (4.327 + 7.684) - 1), 0.30) << mx_a2a;
  EXPECT_LT(std::fabs(mx_flex / (4.343 + 7.741) - 1), 0.30) << mx_flex;
  // Measured: HybridEP beats the all-to-all dispatcher by 19% with four experts per GPU (it
  // sends a token once per GPU, not once per expert) and by ~0 with one.
  EXPECT_LT(ds_flex, 0.9 * ds_a2a);
  EXPECT_NEAR(mx_flex / mx_a2a, 1.0, 0.05);
}

}  // namespace
}  // namespace trainsim::scenarios
