// The data loader (step/input_pipeline.h) and the host overheads (step/host_overhead.h) in the
// step: closed forms of the loader's rate and queue, the input stall the first stage sees, the
// launch-bound pass, and that the defaults change nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "step/host_overhead.h"
#include "step/input_pipeline.h"
#include "step/pass_costs.h"
#include "step/step_simulation.h"
#include "tests/step/dgx.h"

namespace trainsim::step {
namespace {

// One node, TP 1 × PP 1 × DP 8: the node's loader feeds 8 replicas.
StepConfig DataParallel(int64_t micro_batches) {
  StepConfig c;
  c.model.num_layers = 4;
  c.model.hidden = 1024;
  c.model.heads = 8;
  c.model.seq_len = 1024;
  c.model.vocab = 256;
  c.parallel.dp = 8;
  c.parallel.global_batch = 8 * micro_batches;
  c.topology = DgxA100(1);
  return c;
}

TEST(InputPipelineTest, CpuRateIsWorkersOverCpuTimePerSample) {
  InputPipelineSpec s;
  s.workers = 4;
  s.cpu_s_per_sample = 0.2;
  EXPECT_DOUBLE_EQ(LoaderSamplesPerSecond(s), 20.0);  // 4 / 0.2 s
  // 8 replicas of micro-batch 2 per node micro-batch: 16 samples at 20/s.
  EXPECT_DOUBLE_EQ(LoaderSecondsPerMicroBatch(s, 16), 0.8);
}

TEST(InputPipelineTest, ReadBandwidthBindsWhenSlowerThanTheCpus) {
  InputPipelineSpec s;
  s.workers = 64;
  s.cpu_s_per_sample = 0.001;  // 64,000 samples/s of CPU
  s.read_bytes_per_s = 1e9;
  s.bytes_per_sample = 1e6;  // 1,000 samples/s of reading
  EXPECT_DOUBLE_EQ(LoaderSamplesPerSecond(s), 1000.0);
}

TEST(InputPipelineTest, DefaultSpecNeverBinds) {
  const InputPipelineSpec s;
  EXPECT_TRUE(std::isinf(LoaderSamplesPerSecond(s)));
  EXPECT_EQ(LoaderSecondsPerMicroBatch(s, 1e6), 0.0);
  EXPECT_EQ(MicroBatchReadyS(0.0, 0, 1000), 0.0);
}

TEST(InputPipelineTest, QueueIsWorkersTimesPrefetchSharedByTheReplicas) {
  InputPipelineSpec s;
  s.workers = 4;
  s.prefetch = 2;
  EXPECT_EQ(QueuedMicroBatches(s, 8), 1);  // 4 · 2 batches over 8 replicas
  EXPECT_EQ(QueuedMicroBatches(s, 1), 8);
  // Micro-batch i ≥ q is ready (i − q + 1) · t after the step starts.
  EXPECT_EQ(MicroBatchReadyS(0.5, 1, 0), 0.0);
  EXPECT_DOUBLE_EQ(MicroBatchReadyS(0.5, 1, 1), 0.5);
  EXPECT_DOUBLE_EQ(MicroBatchReadyS(0.5, 1, 7), 3.5);
}

TEST(HostOverheadTest, PassIsLaunchBoundOnlyWhenLaunchesOutlastTheKernels) {
  HostOverheadSpec h;
  h.launch_s = 5e-6;
  EXPECT_DOUBLE_EQ(HostPassSeconds(h, 100), 5e-4);
  EXPECT_DOUBLE_EQ(LaunchBoundSeconds(h, 100, 1e-4), 4e-4);
  EXPECT_EQ(LaunchBoundSeconds(h, 100, 1e-3), 0.0);
  h.cuda_graphs = true;  // one graph launch per pass
  EXPECT_DOUBLE_EQ(HostPassSeconds(h, 100), 5e-6);
  EXPECT_EQ(LaunchBoundSeconds(h, 100, 1e-4), 0.0);
}

TEST(StepInputTest, DefaultLoaderAndHostAddNothing) {
  Result<StepResult> r = SimulateStep(DataParallel(4));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->breakdown.input_stall_s, 0.0);
  EXPECT_EQ(r->breakdown.host_overhead_s, 0.0);
}

TEST(StepInputTest, SlowLoaderSetsThePaceAndShowsAsInputStall) {
  StepConfig c = DataParallel(8);
  Result<StepResult> fast = SimulateStep(c);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  c.input.workers = 4;
  c.input.prefetch = 2;  // queue: 4 · 2 / 8 replicas = 1 micro-batch
  // t = 8 samples / (4 workers / cpu) per node micro-batch; make it 4× one micro-batch's
  // forward + backward on the GPU so the loader clearly binds.
  const double gpu_per_mb = fast->breakdown.compute_s / 8;
  c.input.cpu_s_per_sample = 4 * gpu_per_mb * 4 / 8;
  const double t = 8 / (4 / c.input.cpu_s_per_sample);
  Result<StepResult> slow = SimulateStep(c);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  EXPECT_NEAR(slow->loader_s_per_micro_batch, t, 1e-12);
  EXPECT_EQ(slow->loader_queued, 1);
  // From a full queue the last micro-batch is ready at (8 − 1) · t and its forward and backward
  // (t / 4) follow; but over many steps the loader loads all 8 of each, one every t, and the
  // queue refills no faster: the steady step is 8 · t (a new user's diagnose showed a step
  // shorter than its own "5.28 s of loading per step").
  EXPECT_NEAR(slow->time_s, 8 * t, 1e-9 * 8 * t);
  EXPECT_GT(slow->breakdown.input_stall_s, 0.0);
  EXPECT_NE(slow->simulation_note.find("the data loader sets the step"), std::string::npos)
      << slow->simulation_note;
  // The trace draws the whole stall, the wait at the step's end included (a reviewer's case: it
  // ended 0.27 s short of the report on low_utilisation).
  SimulateOptions traced;
  traced.record_trace = true;
  Result<StepResult> drawn = SimulateStep(c, {}, traced);
  ASSERT_TRUE(drawn.ok()) << drawn.status().message();
  int64_t stall_ns = 0;
  for (const TraceSlice& t : drawn->trace) {
    if (t.gpu == 0 && t.name == "input stall") stall_ns += t.duration_ns;
  }
  EXPECT_NEAR(double(stall_ns) * 1e-9, drawn->breakdown.input_stall_s, 1e-6);
  // Compute is unchanged; the stall accounts for the longer step with the rest.
  EXPECT_NEAR(slow->breakdown.compute_s, fast->breakdown.compute_s, 1e-9);
  EXPECT_NEAR(slow->breakdown.total_s(), slow->time_s, 1e-9 * slow->time_s);
}

TEST(StepInputTest, FrameworkTimePerStepIsHostOverhead) {
  StepConfig c = DataParallel(2);
  Result<StepResult> base = SimulateStep(c);
  ASSERT_TRUE(base.ok());
  c.host.step_s = 0.05;
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->breakdown.host_overhead_s, 0.05, 1e-9);
  EXPECT_NEAR(r->time_s, base->time_s + 0.05, 1e-6);
}

TEST(StepInputTest, TinyMicroBatchesBecomeLaunchBoundAndCudaGraphsFixIt) {
  StepConfig c = DataParallel(2);
  // A 4-layer model of hidden 256 at 128 tokens per micro-batch: its kernels last ~3-4 µs
  // (the 3 µs GPU-side overhead plus well under a µs of work), less than the default 5 µs launch.
  c.model.hidden = 256;
  c.model.heads = 4;
  c.model.seq_len = 128;
  EXPECT_DOUBLE_EQ(c.host.launch_s, 5e-6);
  Result<StepResult> eager = SimulateStep(c);
  ASSERT_TRUE(eager.ok()) << eager.status().message();
  EXPECT_GT(eager->breakdown.host_overhead_s, 0.0);
  c.host.cuda_graphs = true;
  Result<StepResult> graphs = SimulateStep(c);
  ASSERT_TRUE(graphs.ok());
  EXPECT_EQ(graphs->breakdown.host_overhead_s, 0.0);
  EXPECT_LT(graphs->time_s, eager->time_s);
}

TEST(HostOverheadTest, DeviceSyncCostsTheCopysAndTheNextKernelsLaunch) {
  HostOverheadSpec h;
  h.launch_s = 5e-6;
  EXPECT_DOUBLE_EQ(DeviceSyncSeconds(h), 1e-5);
  h.cuda_graphs = true;  // a graph cannot span the host's wait
  EXPECT_DOUBLE_EQ(DeviceSyncSeconds(h), 1e-5);
}

// 4 layers, the last two MoE (8 experts, top-2, EP 8 over one node), one pipeline stage.
StepConfig MoeLayers() {
  StepConfig c = DataParallel(2);
  c.model.moe.experts = 8;
  c.model.moe.top_k = 2;
  c.model.moe.first_dense_layers = 2;
  c.parallel.ep = 8;
  return c;
}

TEST(HostOverheadTest, EachMoeLayerForwardWaitsForItsDispatcherOnce) {
  StepConfig c = MoeLayers();
  Result<std::vector<ChunkCost>> k = ChunkCosts(c, GemmCalibrationOf(c), GroupTimers{});
  ASSERT_TRUE(k.ok()) << k.status().message();
  ASSERT_EQ(k->size(), 1u);
  // Kernels of 5 µs host time each run longer than their launches here: the only host time
  // the GPU sees is the two MoE layers' syncs, 2 · 2 · 5 µs; backward has none.
  EXPECT_NEAR((*k)[0].fwd_host_s, 2 * 2 * 5e-6, 1e-15);
  EXPECT_EQ((*k)[0].bwd_host_s, 0.0);
  // With a host slower than every kernel, each MoE layer is launch-bound on its own kernels
  // (it cannot borrow the dense layers' slack), the rest of the pass on the rest.
  c.host.launch_s = 1e-3;
  k = ChunkCosts(c, GemmCalibrationOf(c), GroupTimers{});
  ASSERT_TRUE(k.ok());
  const ChunkCost& p = (*k)[0];
  const double moe_s = p.moe.fwd_compute_s + p.moe.fwd_tp_s + p.moe.fwd_cp_s + p.moe.fwd_ep_s;
  const double all_s = p.fwd_compute_s + p.fwd_comm_s();
  double moe_k = 0;
  for (const parallelism::KernelOp& op :
       parallelism::LayerOps(c.model, c.parallel.split(), 1, true)) {
    moe_k += op.fwd_kernels;
  }
  const double expected = 2 * (2e-3 + std::max(0.0, moe_k * 1e-3 - moe_s)) +
                          std::max(0.0, (p.fwd_kernels - 2 * moe_k) * 1e-3 - (all_s - 2 * moe_s));
  EXPECT_NEAR(p.fwd_host_s, expected, 1e-12);
  EXPECT_GT(p.fwd_host_s, LaunchBoundSeconds(c.host, p.fwd_kernels, all_s));
}

}  // namespace
}  // namespace trainsim::step
