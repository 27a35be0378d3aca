// comm/ benchmarks (bench/README.md, section "comm").
//
// BM_RingAllReduce1GiB/n: build the ring schedule of one 1 GiB all-reduce over the first n GPUs
// of a DGX H100 cluster (n/8 nodes, 8 rails), expand it into flows on a fresh FlowNetwork and
// run the engine to completion. n = 128: 254 steps × 1,024 flows (8 channels); n = 1024:
// 2,046 steps × 8,192 flows. Target: 128 GPUs under 50 ms.
// BM_EstimateAllReduceAuto/n: the closed form with algorithm and protocol selection (what the
// step simulation calls per collective).
// BM_TreeAllReduce1GiB/n: the pipelined double binary tree expansion, for comparison.
// BM_NvlsTreeAllReduce1GiB/n: the NVLS_TREE expansion (NVLS across nodes without SHARP). Issue 20's
// target for ring, tree and NVLS at n = 4,096: ≤ 0.1 s each.
// BM_AllToAll1GiB/n: the direct all-to-all, one wave of n(n−1) flows (nothing to group: every
// transfer runs once), for the flow solver's per-flow cost.
#include <benchmark/benchmark.h>

#include "comm/collective.h"
#include "comm/flow_network.h"
#include "comm/topology.h"
#include "sim/engine.h"

namespace trainsim::comm {
namespace {

Topology Cluster(int gpus, bool nvls = false) {
  TopologySpec spec;
  spec.nodes = (gpus + 7) / 8;
  spec.nvls = nvls;  // DGX H100's NVSwitch 3 has NVLS; off by default in TopologySpec
  return Topology::Build(spec).value();
}

void RunOnce(benchmark::State& state, Algo algo, Op op = Op::kAllReduce) {
  const int n = static_cast<int>(state.range(0));
  const Topology topology = Cluster(n, algo == Algo::kNvlsTree);
  const CollectiveSpec spec{op, algo, FirstGpus(n), uint64_t{1} << 30};
  uint64_t flows = 0;
  double simulated_s = 0;
  for (auto _ : state) {
    sim::Engine engine;
    FlowNetwork network(&engine, &topology);
    sim::Time done;
    Result<CollectiveEstimate> r = RunCollective(&network, spec, [&] { done = engine.now(); });
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    engine.Run();
    flows = network.flows_started();
    simulated_s = done.seconds();
    benchmark::DoNotOptimize(done);
  }
  state.counters["flows"] = static_cast<double>(flows);
  state.counters["simulated_ms"] = simulated_s * 1e3;
  state.counters["flows_per_s"] =
      benchmark::Counter(static_cast<double>(flows), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_RingAllReduce1GiB(benchmark::State& state) { RunOnce(state, Algo::kRing); }
BENCHMARK(BM_RingAllReduce1GiB)->Arg(128)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_TreeAllReduce1GiB(benchmark::State& state) { RunOnce(state, Algo::kTree); }
BENCHMARK(BM_TreeAllReduce1GiB)->Arg(128)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

// Issue 20's third case: NVLS_TREE (NVLink SHARP inside each node, a double binary tree between
// nodes), 1 GiB over 1,024 and 4,096 GPUs; target ≤ 0.1 s at 4,096 like the ring and the tree.
void BM_NvlsTreeAllReduce1GiB(benchmark::State& state) { RunOnce(state, Algo::kNvlsTree); }
BENCHMARK(BM_NvlsTreeAllReduce1GiB)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_AllToAll1GiB(benchmark::State& state) { RunOnce(state, Algo::kDirect, Op::kAllToAll); }
BENCHMARK(BM_AllToAll1GiB)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_EstimateAllReduceAuto(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Topology topology = Cluster(n);
  const CollectiveSpec spec{Op::kAllReduce, Algo::kAuto, FirstGpus(n), uint64_t{1} << 30};
  for (auto _ : state) {
    Result<CollectiveEstimate> r = EstimateCollective(topology, spec);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_EstimateAllReduceAuto)->Arg(8)->Arg(128)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trainsim::comm

BENCHMARK_MAIN();
