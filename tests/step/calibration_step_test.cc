// The step simulation with a calibration file: matrix products run at the
// measured rate where the sample file covers their shape, TP collectives take the measured
// curve, and the change in compute time is exactly what the measured rates predict.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "comm/calibration.h"
#include "parallelism/compute.h"
#include "parallelism/model.h"
#include "scenarios/scenario.h"
#include "scenarios/step_config.h"
#include "step/step_simulation.h"

namespace trainsim::step {
using namespace parallelism;  // NOLINT: the models the step simulation runs
namespace {

const std::string kSource = TRAINSIM_SOURCE_DIR;
const std::string kSample = kSource + "/scenarios/calibration/dgx_h100_sample.json";

std::shared_ptr<const comm::Calibration> Sample() {
  Result<comm::Calibration> c = comm::LoadCalibration(kSample);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::make_shared<const comm::Calibration>(std::move(*c));
}

// The demo (GPT-3 175B, TP 8 with SP, micro-batch 1, H100) cut to a short step: 4 stages of 2
// layers and 4 micro-batches, no recomputation, so a middle stage's compute is fwd + bwd of its
// layers per micro-batch.
StepConfig DemoConfig() {
  Result<pb::Scenario> s =
      scenarios::LoadScenario(kSource + "/scenarios/examples/demo.textproto", {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  Result<scenarios::ResolvedScenario> r = scenarios::Resolve(*s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  Result<StepConfig> c = scenarios::MakeStepConfig(*r);
  EXPECT_TRUE(c.ok()) << c.status().message();
  c->model.num_layers = 8;
  c->parallel.pp = 4;
  c->parallel.dp = 1;
  c->parallel.global_batch = 4;
  c->parallel.recompute = Recompute::kNone;
  c->parallel.zero_stage = 0;
  c->topology.nodes = 4;
  c->allow_oom = true;
  c->report_gpu = 8;  // TP rank 0 of stage 1: layers only (no embedding, no head)
  return *c;
}

// The sample file's bf16 rows (scenarios/calibration/dgx_h100_sample.json), by the shape the
// simulator runs (forward (T, n, k), dgrad (T, k, n), wgrad (k, n, T)) for T = 2048 tokens,
// h = 12288, TP 8: qkv (2048, 4608, 12288), proj (2048, 12288, 1536), fc1 (2048, 6144, 12288),
// fc2 (2048, 12288, 6144). A wgrad is the transpose of the file's row (same product); fc1's
// dgrad is fc2's forward shape and fc2's dgrad fc1's forward shape.
struct Expected {
  const char* op;
  double fwd_tflops, dgrad_tflops, wgrad_tflops;
};
constexpr Expected kRows[] = {
    {"qkv", 533.9, 699.8, 652.8},
    {"attn_out", 663.9, 533.9, 609.3},
    {"mlp_up", 711.9, 704.6, 677.0},
    {"mlp_down", 704.6, 711.9, 677.0},
};

TEST(CalibrationStepTest, LayerGemmsTakeTheSampleRatesIncludingTransposedWgrads) {
  const StepConfig c = DemoConfig();
  auto cal = Sample();
  const GemmCalibration g{cal.get(), "bf16"};
  const double peak_tflops = c.gpu.peak_flops / 1e12;
  int matched = 0;
  for (const KernelOp& op : LayerOps(c.model, {8, true}, 1)) {
    for (const Expected& e : kRows) {
      if (op.name != e.op) continue;
      ++matched;
      const double b = 1, m = double(op.m), n = double(op.n), k = double(op.k);
      EXPECT_DOUBLE_EQ(*CalibratedGemmEfficiency(c.gpu, &g, b, m, n, k), e.fwd_tflops / peak_tflops)
          << op.name;
      EXPECT_DOUBLE_EQ(*CalibratedGemmEfficiency(c.gpu, &g, b, m, k, n),
                       e.dgrad_tflops / peak_tflops)
          << op.name;
      EXPECT_DOUBLE_EQ(*CalibratedGemmEfficiency(c.gpu, &g, b, k, n, m),
                       e.wgrad_tflops / peak_tflops)
          << op.name;
    }
  }
  EXPECT_EQ(matched, 4);
  // fp16 has no rows in the sample: the model stays.
  const GemmCalibration fp16{cal.get(), "fp16"};
  EXPECT_FALSE(CalibratedGemmEfficiency(c.gpu, &fp16, 1, 2048, 4608, 12288));
  // Beyond 2x in a dimension of every row: the model.
  EXPECT_FALSE(CalibratedGemmEfficiency(c.gpu, &g, 1, 256, 4608, 12288));
}

TEST(CalibrationStepTest, ComputeTimeChangesByTheFlopsOverTheMeasuredMinusModelledRate) {
  StepConfig base = DemoConfig();
  StepConfig calibrated = base;
  calibrated.calibration = Sample();
  Result<StepResult> a = SimulateStep(base);
  ASSERT_TRUE(a.ok()) << a.status().message();
  Result<StepResult> b = SimulateStep(calibrated);
  ASSERT_TRUE(b.ok()) << b.status().message();

  // Every one of these products is compute-bound at both rates (about 2·T·n·k / (n·k·2 bytes)
  // ≥ 1000 FLOP/byte against H100's ~300), so its time is FLOPs / rate and the difference per
  // product is FLOPs · (1/measured − 1/(peak · modelled efficiency)).
  const double peak = base.gpu.peak_flops;
  double delta_per_layer = 0;
  for (const KernelOp& op : LayerOps(base.model, {8, true}, 1)) {
    for (const Expected& e : kRows) {
      if (op.name != e.op) continue;
      const double m = double(op.m), n = double(op.n), k = double(op.k);
      const double flops = 2 * m * n * k;
      auto d = [&](double tflops, double mm, double nn, double kk) {
        return flops / (tflops * 1e12) -
               flops / (peak * GemmEfficiency(base.gpu, base.compute, 1, mm, nn, kk));
      };
      delta_per_layer +=
          d(e.fwd_tflops, m, n, k) + d(e.dgrad_tflops, m, k, n) + d(e.wgrad_tflops, k, n, m);
    }
  }
  const double layers_per_stage = 2, micro_batches = 4;
  const double expected = micro_batches * layers_per_stage * delta_per_layer;
  const double got = b->breakdown.compute_s - a->breakdown.compute_s;
  // Task durations are rounded to the engine's nanoseconds: 8 tasks.
  EXPECT_NEAR(got, expected, 1e-8);
  EXPECT_NE(expected, 0);

  const CalibrationUse& u = b->calibration;
  EXPECT_TRUE(u.used);
  EXPECT_TRUE(u.sample);
  EXPECT_EQ(u.gpu, "NVIDIA H100 80GB HBM3");
  // The layer: 4 forward + 4 dgrad + 4 wgrad products, two dgrads repeating forward shapes: 10
  // distinct. The head's logits, 2048 × 51200/8 × 12288, its dgrad and its wgrad: 3 more, each
  // within 2× of a sample row in every dimension (fc1 2048 × 6144 × 12288, fc2.dgrad, fc1.wgrad).
  EXPECT_EQ(u.gemm_shapes, 13);
  EXPECT_EQ(u.gemm_shapes_calibrated, 13);
  // With SP the TP collectives are all-gathers and reduce-scatters of b·s·h·2 = 48 MiB over the
  // 8 GPUs of one node, and the vocab-parallel cross-entropy all-reduces 2048·4 = 8 KiB
  // (Megatron's _VocabParallelCrossEntropy): all inside the sample's 8 B .. 1 GiB curves.
  EXPECT_EQ(u.collectives_calibrated,
            (std::vector<std::string>{"all_gather 8 ranks", "reduce_scatter 8 ranks",
                                      "all_reduce 8 ranks"}));
  EXPECT_TRUE(u.collectives_modelled.empty());
  EXPECT_FALSE(a->calibration.used);
}

TEST(CalibrationStepTest, TpCollectivesTakeTheInterpolatedCurve) {
  // Without SP a layer all-reduces 48 MiB twice forward and twice backward. The sample's 8-rank
  // ring curve has 16 MiB → 137.4 µs and 128 MiB → 768.6 µs; log-log at 48 MiB:
  // 137.4 · (768.6/137.4)^(ln 3 / ln 8) = 341.21 µs (ring is the faster measured curve here:
  // tree's is 142.2 → 916.7 µs).
  StepConfig base = DemoConfig();
  base.parallel.sequence_parallel = false;
  base.parallel.pp_scatter_gather = false;
  StepConfig calibrated = base;
  calibrated.calibration = Sample();
  Result<StepResult> b = SimulateStep(calibrated);
  ASSERT_TRUE(b.ok()) << b.status().message();
  const double per_call = 137.4e-6 * std::pow(768.6 / 137.4, std::log(3.0) / std::log(8.0));
  const double expected = 4 /*micro-batches*/ * 2 /*layers*/ * 4 /*calls*/ * per_call;
  EXPECT_NEAR(b->breakdown.exposed_tp_comm_s, expected, 4 * 2 * 4 * 1e-9 + 1e-9);
  EXPECT_EQ(b->calibration.collectives_calibrated, std::vector<std::string>{"all_reduce 8 ranks"});
}

}  // namespace
}  // namespace trainsim::step
