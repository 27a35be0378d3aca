// A full sweep of GPT-3 175B (96 layers, hidden 12288, 96 heads, seq 2048, global batch 1536) on
// 1024 A100-80GB (128 DGX A100 nodes, HDR-200 rails), 300B tokens, default failure model:
//  - BM_SweepEstimate175B_1024A100: enumerate every layout and reject or estimate each
//    (memory model + analytic estimator + Daly goodput), no step simulation. Target: < 10 s.
//  - BM_Sweep175B_1024A100: RunSweep as `trainsim sweep` runs it: the above plus the top 10 and
//    the Pareto front confirmed by the step simulation.
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

}  // namespace
}  // namespace trainsim::sweep

BENCHMARK_MAIN();
