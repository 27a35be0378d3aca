// Megatron-Core's selective recomputation by module (parallelism.recompute_modules): what each
// module re-runs in the backward (its ops' forward time, its forward collectives) and what it
// saves in activation memory, each checked against the op or the tensor it names.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallelism/memory.h"
#include "parallelism/model.h"
#include "step/pass_costs.h"
#include "step/step_simulation.h"

namespace trainsim::step {
namespace {

using parallelism::KernelOp;
using parallelism::LayerBlock;
using parallelism::LayerKind;
using parallelism::Recompute;

// 4 layers of hidden 1024 on one DGX A100, the last two MoE (8 experts of width 512, top-2),
// one stage, DP 8; a flash-attention kernel; dropout off, so no masks are stored.
StepConfig MoeModel() {
  StepConfig c;
  c.model.num_layers = 4;
  c.model.hidden = 1024;
  c.model.heads = 8;
  c.model.seq_len = 1024;
  c.model.vocab = 256;
  c.model.dropout = false;
  c.model.flash_attention = true;
  c.model.moe.experts = 8;
  c.model.moe.top_k = 2;
  c.model.moe.expert_ffn_hidden = 512;
  c.model.moe.first_dense_layers = 2;
  c.model.moe.load_imbalance = 1.0;
  c.parallel.dp = 8;
  c.parallel.global_batch = 16;
  c.topology.nodes = 1;
  c.topology.gpus_per_node = 8;
  c.topology.nvlink_GBps = 300;
  c.topology.nics_per_node = 8;
  c.topology.nic_Gbps = 200;
  c.topology.pcie_GBps = 32;
  return c;
}

ChunkCost Costs(const StepConfig& c) {
  Result<std::vector<ChunkCost>> k = ChunkCosts(c, GemmCalibrationOf(c), GroupTimers{});
  EXPECT_TRUE(k.ok()) << k.status().message();
  return k.ok() ? (*k)[0] : ChunkCost{};
}

// Forward seconds of the ops of one layer that `only` re-runs.
double ForwardOf(const StepConfig& c, bool moe, uint32_t only) {
  double s = 0;
  const parallelism::GemmCalibration cal = GemmCalibrationOf(c);
  for (const KernelOp& op :
       parallelism::LayerOps(c.model, c.parallel.split(), c.parallel.micro_batch, moe)) {
    if (op.recomputed_by & only) s += parallelism::OpTimeSeconds(c.gpu, c.compute, op, true, &cal);
  }
  return s;
}

StepConfig Selective(uint32_t modules) {
  StepConfig c = MoeModel();
  c.parallel.recompute = Recompute::kSelective;
  c.parallel.recompute_modules = modules;
  return c;
}

TEST(RecomputeModulesTest, MoeActRerunsOnlyTheExpertActivationOfEachMoeLayer) {
  const ChunkCost none = Costs(Selective(0));
  const ChunkCost act = Costs(Selective(parallelism::kRecomputeMoeAct));
  // The expert activation is one memory-bound op per MoE layer; two MoE layers in the chunk.
  double swiglu = 0;
  const StepConfig c = MoeModel();
  const parallelism::GemmCalibration cal = GemmCalibrationOf(c);
  for (const KernelOp& op :
       parallelism::LayerOps(c.model, c.parallel.split(), c.parallel.micro_batch, true)) {
    if (op.name == "expert_swiglu" || op.name == "expert_gelu") {
      swiglu += parallelism::OpTimeSeconds(c.gpu, c.compute, op, true, &cal);
    }
  }
  ASSERT_GT(swiglu, 0.0);
  EXPECT_NEAR(act.bwd_compute_s - none.bwd_compute_s, 2 * swiglu, 1e-12);
  EXPECT_DOUBLE_EQ(act.fwd_compute_s, none.fwd_compute_s);
  EXPECT_NEAR(act.moe.bwd_compute_s - none.moe.bwd_compute_s, swiglu, 1e-15);
  EXPECT_DOUBLE_EQ(act.dense.bwd_compute_s, none.dense.bwd_compute_s);
}

TEST(RecomputeModulesTest, MoeRerunsTheWholeMoeBlockAndMlpTheDenseOne) {
  const ChunkCost none = Costs(Selective(0));
  const ChunkCost moe = Costs(Selective(parallelism::kRecomputeMoe));
  const ChunkCost mlp = Costs(Selective(parallelism::kRecomputeMlp));
  const StepConfig c = MoeModel();
  // Router, dispatch metadata, permute, experts and unpermute of each MoE layer; the dense
  // layers' MLP (fc1, activation, fc2) for "mlp". Neither touches the other kind of layer.
  const double moe_block = ForwardOf(c, true, parallelism::kRecomputeMoe);
  const double dense_mlp = ForwardOf(c, false, parallelism::kRecomputeMlp);
  EXPECT_GT(moe_block, ForwardOf(c, true, parallelism::kRecomputeMoeAct));
  EXPECT_NEAR(moe.bwd_compute_s - none.bwd_compute_s, 2 * moe_block, 1e-12);
  EXPECT_NEAR(mlp.bwd_compute_s - none.bwd_compute_s, 2 * dense_mlp, 1e-12);
  EXPECT_DOUBLE_EQ(moe.dense.bwd_compute_s, none.dense.bwd_compute_s);
  EXPECT_DOUBLE_EQ(mlp.moe.bwd_compute_s, none.moe.bwd_compute_s);
}

TEST(RecomputeModulesTest, DefaultSelectiveIsTheAttentionCoreAsBefore) {
  // Megatron-Core's default module list is ["core_attn"]: a flash kernel's forward runs again.
  StepConfig c = MoeModel();
  c.parallel.recompute = Recompute::kSelective;
  EXPECT_EQ(c.parallel.recompute_modules, uint32_t(parallelism::kRecomputeCoreAttn));
  const ChunkCost core = Costs(c);
  const ChunkCost none = Costs(Selective(0));
  double flash = 0;
  const parallelism::GemmCalibration cal = GemmCalibrationOf(c);
  for (const KernelOp& op :
       parallelism::LayerOps(c.model, c.parallel.split(), c.parallel.micro_batch, false)) {
    if (op.kind == parallelism::OpKind::kFlashAttention) {
      flash += parallelism::OpTimeSeconds(c.gpu, c.compute, op, true, &cal);
    }
  }
  ASSERT_GT(flash, 0.0);
  EXPECT_NEAR(core.bwd_compute_s - none.bwd_compute_s, 4 * flash, 1e-12);  // 4 attention layers
}

TEST(RecomputeModulesTest, MoeRecomputeRerunsTheForwardAllToAllsOthersDoNot) {
  // EP 8 over NVLink: the MoE layers' dispatch and combine are real all-to-alls.
  auto with = [](uint32_t modules) {
    StepConfig c = Selective(modules);
    c.parallel.ep = 8;
    Result<StepResult> r = SimulateStep(c);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->breakdown.exposed_ep_comm_s : -1.0;
  };
  const double none = with(0);
  ASSERT_GT(none, 0.0);
  EXPECT_DOUBLE_EQ(with(parallelism::kRecomputeMoeAct), none);
  // The forward's dispatch and combine run again before each MoE layer's backward. Backward
  // moves the same bytes as forward, so the exposed EP time grows by about half.
  const double moe = with(parallelism::kRecomputeMoe);
  EXPECT_GT(moe, none * 1.3);
  EXPECT_LT(moe, none * 1.7);
}

// Activation bytes of one layer of kind `kind` with these modules.
double Bytes(uint32_t modules, LayerKind kind) {
  StepConfig c = Selective(modules);
  return parallelism::LayerActivationBytes(c.model, c.parallel, kind);
}

TEST(RecomputeModulesTest, EachModuleFreesTheTensorsItRecomputes) {
  const LayerKind moe_layer{LayerBlock::kTransformer, true, false};
  const LayerKind dense_layer{LayerBlock::kTransformer, false, false};
  // T = 1024 tokens, h = 1024, 2-byte activations, TP 1.
  const double e = 2, T = 1024, h = 1024;
  // moe_act: the experts' activation output, T·top_k routed rows of width 512.
  EXPECT_DOUBLE_EQ(Bytes(0, moe_layer) - Bytes(parallelism::kRecomputeMoeAct, moe_layer),
                   e * T * 2 * 512);
  // layernorm: the MoE layer's pre-MLP norm output; a dense layer's norms are fused into the
  // linears, nothing to free.
  EXPECT_DOUBLE_EQ(Bytes(0, moe_layer) - Bytes(parallelism::kRecomputeLayernorm, moe_layer),
                   e * T * h);
  EXPECT_DOUBLE_EQ(Bytes(0, dense_layer), Bytes(parallelism::kRecomputeLayernorm, dense_layer));
  // moe on a MoE-only block (a hybrid model's E layer): its norm's input and the checkpoint's
  // input (the norm's output); with layernorm as well, only the norm's input.
  const LayerKind moe_block{LayerBlock::kMoe, true, false};
  EXPECT_DOUBLE_EQ(Bytes(parallelism::kRecomputeMoe, moe_block), 2 * e * T * h);
  EXPECT_DOUBLE_EQ(Bytes(parallelism::kRecomputeMoe | parallelism::kRecomputeLayernorm, moe_block),
                   e * T * h);
  // mlp on an MLP-only block: the fused norm's input only.
  const LayerKind mlp_block{LayerBlock::kMlp, false, false};
  EXPECT_DOUBLE_EQ(Bytes(parallelism::kRecomputeMlp, mlp_block), e * T * h);
  // core_attn with a flash kernel frees only its fp32 log-sum-exp: 4 bytes per query per head.
  EXPECT_DOUBLE_EQ(Bytes(0, dense_layer) - Bytes(parallelism::kRecomputeCoreAttn, dense_layer),
                   4.0 * 8 * T);
}

TEST(RecomputeModulesTest, HardwareFlopsCountTheRecomputedMatrixProducts) {
  const StepConfig c = MoeModel();
  const auto& m = c.model;
  const double none = parallelism::HardwareFlopsPerIteration(m, 16, Recompute::kSelective, 0);
  // moe_act and layernorm re-run no matrix product.
  EXPECT_DOUBLE_EQ(parallelism::HardwareFlopsPerIteration(
                       m, 16, Recompute::kSelective,
                       parallelism::kRecomputeMoeAct | parallelism::kRecomputeLayernorm),
                   none);
  // mlp: the two dense layers' MLP forward, 2·h·4h·2 FLOPs per token (GELU, two matrices).
  const double tokens = 16.0 * 1024;
  EXPECT_NEAR(parallelism::HardwareFlopsPerIteration(m, 16, Recompute::kSelective,
                                                     parallelism::kRecomputeMlp) -
                  none,
              tokens * 2 * (2 * 1024.0 * 4096 * 2), 1.0);
  // moe: the two MoE layers' router (2·h·8) and top-2 experts of width 512 (2·h·512·2 each).
  EXPECT_NEAR(parallelism::HardwareFlopsPerIteration(m, 16, Recompute::kSelective,
                                                     parallelism::kRecomputeMoe) -
                  none,
              tokens * 2 * (2 * 1024.0 * 8 + 2 * 2 * 1024.0 * 512 * 2), 1.0);
}

// The same model with every layer dense.
StepConfig Dense(Recompute r, bool block, int layers_per_checkpoint) {
  StepConfig c = MoeModel();
  c.model.moe = {};
  c.parallel.recompute = r;
  c.parallel.recompute_block = block;
  c.parallel.recompute_num_layers = layers_per_checkpoint;
  return c;
}

TEST(FullRecomputeMethodTest, BlockRerunsOnlyTheFirstLayersOfEachChunk) {
  const double none = Costs(Dense(Recompute::kNone, false, 1)).bwd_compute_s;
  const double uniform = Costs(Dense(Recompute::kFull, false, 1)).bwd_compute_s;
  const double uniform2 = Costs(Dense(Recompute::kFull, false, 2)).bwd_compute_s;
  const double block1 = Costs(Dense(Recompute::kFull, true, 1)).bwd_compute_s;
  const double block3 = Costs(Dense(Recompute::kFull, true, 3)).bwd_compute_s;
  // Uniform re-runs every layer whatever the group size; block the first N of the 4 layers.
  ASSERT_GT(uniform, none);
  EXPECT_NEAR(uniform2, uniform, 1e-12);
  EXPECT_NEAR(block1 - none, (uniform - none) / 4, 1e-12);
  EXPECT_NEAR(block3 - none, 3 * (uniform - none) / 4, 1e-12);
  const StepConfig b = Dense(Recompute::kFull, true, 1);
  EXPECT_DOUBLE_EQ(parallelism::FullyRecomputedFraction(b.model, b.parallel), 0.25);
}

TEST(FullRecomputeMethodTest, CheckpointsKeepTheirInputsAndTheRestKeepsEverything) {
  const parallelism::ChunkLayers all{0, 4};
  auto chunk = [&](Recompute r, bool block, int n) {
    const StepConfig c = Dense(r, block, n);
    return parallelism::ChunkActivationBytes(c.model, c.parallel, all);
  };
  const double input = 2.0 * 1024 * 1024;  // e·T·h
  const double layer = chunk(Recompute::kNone, false, 1) / 4;
  ASSERT_GT(layer, input);
  EXPECT_DOUBLE_EQ(chunk(Recompute::kFull, false, 1), 4 * input);
  EXPECT_DOUBLE_EQ(chunk(Recompute::kFull, false, 2), 2 * input);  // two groups of two
  EXPECT_DOUBLE_EQ(chunk(Recompute::kFull, false, 3), 2 * input);  // groups of 3 and 1
  EXPECT_DOUBLE_EQ(chunk(Recompute::kFull, true, 1), input + 3 * layer);
  EXPECT_DOUBLE_EQ(chunk(Recompute::kFull, true, 4), 4 * input);
}

}  // namespace
}  // namespace trainsim::step
