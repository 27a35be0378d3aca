// A full sweep of GPT-3 175B (96 layers, hidden 12288, 96 heads, seq 2048, global batch 1536) on
// 1024 A100-80GB (128 DGX A100 nodes, HDR-200 rails), 300B tokens, default failure model:
//  - BM_SweepEstimate175B_1024A100: enumerate every layout and reject or estimate each
//    (memory model + analytic estimator + Daly goodput), no step simulation. Target: < 10 s.
//  - BM_Sweep175B_1024A100: RunSweep as `trainsim sweep` runs it: the above plus the top 10 and
//    the Pareto front confirmed by the step simulation.
//  - BM_SweepEstimate405B_16384H100: every layout of Llama 3 405B on 16,384 H100
//    (the shape of scenarios/examples/llama3_405b_sweep.textproto, written out here so the bench
//    needs only trainsim_sweep) with today's dimensions (CP, uneven stages,
//    ZeRO-2 with PP, FSDP and hybrid sharding), enumerated and estimated; layouts/s is the figure.
#include <benchmark/benchmark.h>

#include "parallelism/model.h"
#include "sweep/sweep.h"

namespace trainsim::sweep {
namespace {

SweepProblem Gpt3On1024A100() {
  SweepProblem p;
  step::StepConfig& c = p.base;
  c.model.num_layers = 96;
  c.model.hidden = 12288;
  c.model.heads = 96;
  c.model.seq_len = 2048;
  c.model.vocab = 51200;
  c.parallel.global_batch = 1536;
  c.gpu = parallelism::GpuSpec{};  // A100-SXM4-80GB
  c.topology.gpus_per_node = 8;
  c.topology.nvlink_GBps = 300;  // NVLink 3, per direction
  c.topology.nics_per_node = 8;
  c.topology.nic_Gbps = 200;  // HDR InfiniBand
  c.topology.pcie_GBps = 32;
  p.parameters = parallelism::ParameterCount(c.model);
  p.token_budget = 300e9;
  p.gpu_counts = {1024};
  return p;
}

void BM_SweepEstimate175B_1024A100(benchmark::State& state) {
  const SweepProblem p = Gpt3On1024A100();
  int64_t layouts = 0, evaluated = 0;
  for (auto _ : state) {
    EstimatorCache cache;
    layouts = evaluated = 0;
    for (const Candidate& c : EnumerateLayouts(p)) {
      const Evaluation e = EvaluateLayout(p, c, &cache);
      ++layouts;
      evaluated += !e.rejected;
    }
    benchmark::DoNotOptimize(evaluated);
  }
  state.counters["layouts"] = double(layouts);
  state.counters["evaluated"] = double(evaluated);
}
BENCHMARK(BM_SweepEstimate175B_1024A100)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Sweep175B_1024A100(benchmark::State& state) {
  const SweepProblem p = Gpt3On1024A100();
  LocalCommunicator comm;
  int64_t confirmed = 0;
  for (auto _ : state) {
    Result<SweepResult> r = RunSweep(p, {Objective::kTime, 10, false}, &comm);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    confirmed = r->confirmed;
  }
  state.counters["confirmed"] = double(confirmed);
}
BENCHMARK(BM_Sweep175B_1024A100)->Unit(benchmark::kMillisecond)->Iterations(1);

// Llama 3.1 405B (Hugging Face meta-llama/Llama-3.1-405B config.json: 126 layers, hidden 16384,
// 128 heads / 8 KV, FFN 53248, vocabulary 128256, untied, RoPE, RMSNorm, no biases), seq 8192,
// global batch 2048 (Dubey et al. 2024 §3.4.1: 16M tokens), 15.6T tokens, on 2048 DGX H100
// nodes (989 TFLOP/s dense BF16, 3.35 TB/s, 80 GB; NVLink 4 450 GB/s; 8 NDR-400 NICs).
SweepProblem Llama405BOn16384H100() {
  SweepProblem p;
  step::StepConfig& c = p.base;
  parallelism::ModelSpec& m = c.model;
  m.num_layers = 126;
  m.hidden = 16384;
  m.heads = 128;
  m.kv_heads = 8;
  m.ffn_hidden = 53248;
  m.swiglu = true;
  m.flash_attention = true;
  m.dropout = false;
  m.seq_len = 8192;
  m.vocab = 128256;
  m.tied_embeddings = false;
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  c.parallel.global_batch = 2048;
  c.gpu.name = "H100-SXM-80GB";
  c.gpu.arch = parallelism::GpuArch::kHopper;
  c.gpu.num_sms = 132;
  c.gpu.peak_flops = c.gpu.peak_bf16_flops = 989e12;
  c.gpu.hbm_bytes_per_s = 3.35e12;
  c.gpu.memory_bytes = 80e9;
  c.topology.gpus_per_node = 8;
  c.topology.nvlink_GBps = 450;
  c.topology.nics_per_node = 8;
  c.topology.nic_Gbps = 400;
  c.topology.fat_tree_levels = 3;
  c.topology.nvls = true;  // NVSwitch 3 (as scenarios::MakeTopologySpec sets it for Hopper)
  p.parameters = parallelism::ParameterCount(m);
  p.token_budget = 15.6e12;
  p.gpu_counts = {16384};
  return p;
}

void BM_SweepEstimate405B_16384H100(benchmark::State& state) {
  const SweepProblem p = Llama405BOn16384H100();
  int64_t layouts = 0, evaluated = 0;
  for (auto _ : state) {
    EstimatorCache cache;
    layouts = evaluated = 0;
    for (const Candidate& c : EnumerateLayouts(p)) {
      const Evaluation e = EvaluateLayout(p, c, &cache);
      ++layouts;
      evaluated += !e.rejected;
    }
    benchmark::DoNotOptimize(evaluated);
  }
  state.counters["layouts"] = double(layouts);
  state.counters["evaluated"] = double(evaluated);
  state.counters["layouts_per_s"] =
      benchmark::Counter(double(layouts), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SweepEstimate405B_16384H100)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace trainsim::sweep

BENCHMARK_MAIN();
