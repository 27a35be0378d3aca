// One training step of GPT-3 175B on 1024 A100s (TP 8, PP 16, DP 8, micro-batch 1, global
// batch 1536, 1F1B) through the step simulation. Target: under 1 s and under 1 GiB.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "step/step_simulation.h"

namespace trainsim::step {
using namespace parallelism;  // NOLINT: the models the step simulation runs
namespace {

StepConfig Gpt3On1024A100() {
  StepConfig c;
  c.model.num_layers = 96;
  c.model.hidden = 12288;
  c.model.heads = 96;
  c.model.seq_len = 2048;
  c.model.vocab = 51200;
  c.parallel.tp = 8;
  c.parallel.pp = 16;
  c.parallel.dp = 8;
  c.parallel.micro_batch = 1;
  c.parallel.global_batch = 1536;
  c.parallel.schedule = PipelineSchedule::k1F1B;
  c.parallel.recompute = Recompute::kFull;
  c.gpu = GpuSpec{};  // A100-SXM4-80GB
  c.topology.nodes = 128;
  c.topology.gpus_per_node = 8;
  c.topology.nvlink_GBps = 300;  // NVLink 3, per direction
  c.topology.nics_per_node = 8;
  c.topology.nic_Gbps = 200;  // HDR InfiniBand
  c.topology.pcie_GBps = 32;
  return c;
}

void BM_StepGpt3_175B_1024A100(benchmark::State& state) {
  const StepConfig c = Gpt3On1024A100();
  // The counters come from one untimed run (identical to every timed one: deterministic).
  Result<StepResult> first = SimulateStep(c);
  if (!first.ok()) {
    state.SkipWithError(first.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    Result<StepResult> r = SimulateStep(c);
    benchmark::DoNotOptimize(r.ok());
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  state.counters["simulated_step_s"] = first->time_s;
  state.counters["events"] = double(first->events);
  state.counters["flows"] = double(first->flows);
  state.counters["peak_rss_MiB"] = double(u.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_StepGpt3_175B_1024A100)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace trainsim::step

BENCHMARK_MAIN();
