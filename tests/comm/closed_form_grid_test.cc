// The closed form and the flow expansion agree within 1% on an idle network, for every
// algorithm over a grid of group sizes (2 … 1024 GPUs, DGX H100 nodes) and sizes (8 B … 8 GiB).
//
// Grid: groups {2, 8, 16, 128, 1024} × sizes {8 B, 64 KiB, 16 MiB, 1 GiB, 8 GiB}, all
// algorithms, with three exceptions that only keep this binary fast (a 1024-GPU ring expansion
// starts 16.7 million flows): at 1024 GPUs the ring collectives run the two ends of the size
// range, the tree 8 B, 16 MiB and 8 GiB, broadcast up to 16 MiB; all-to-all (n² flows) runs up
// to 128 GPUs. Plus a cluster with one NIC per node and a 2:1 oversubscribed fat tree.
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/flow_network.h"
#include "comm/topology.h"
#include "gtest/gtest.h"
#include "sim/engine.h"

namespace trainsim::comm {
namespace {

constexpr uint64_t kSizes[] = {8, uint64_t{64} << 10, uint64_t{16} << 20, uint64_t{1} << 30,
                               uint64_t{8} << 30};

bool InGrid(Op op, Algo algo, int n, uint64_t bytes) {
  if (n < 1024) return op != Op::kAllToAll || n <= 128;
  switch (op) {
    case Op::kAllReduce:
      if (algo == Algo::kTree) return bytes != kSizes[1] && bytes != kSizes[3];
      if (algo == Algo::kHierarchical) return true;
      return bytes == kSizes[0] || bytes == kSizes[4];
    case Op::kReduceScatter:
    case Op::kAllGather:
      return bytes == kSizes[0] || bytes == kSizes[4];
    case Op::kBroadcast:
      return bytes <= kSizes[2];
    case Op::kAllToAll:
      return false;
    case Op::kSendRecv:
      return true;
  }
  return false;
}

void ExpectAgreement(const Topology& topology, const CollectiveSpec& spec) {
  Result<CollectiveEstimate> est = EstimateCollective(topology, spec);
  ASSERT_TRUE(est.ok()) << est.status().message();
  sim::Engine engine;
  FlowNetwork network(&engine, &topology);
  sim::Time done = sim::Time::Max();
  ASSERT_TRUE(RunCollective(&network, spec, [&] { done = engine.now(); }).ok());
  engine.Run();
  const double closed = est->time.seconds();
  const double expanded = done.seconds();
  EXPECT_NEAR(expanded, closed, 0.01 * closed)
      << OpName(spec.op) << " " << AlgoName(est->algo) << " " << ProtocolName(est->protocol)
      << " n=" << spec.gpus.size() << " bytes=" << spec.bytes;
}

TEST(ClosedFormGridTest, ExpansionAgreesWithClosedFormWithinOnePercent) {
  TopologySpec spec;
  spec.nodes = 128;
  const Topology topology = Topology::Build(spec).value();
  int cases = 0;
  for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather, Op::kBroadcast, Op::kAllToAll,
                Op::kSendRecv}) {
    for (Algo algo : AlgorithmsFor(op)) {
      for (int n : {2, 8, 16, 128, 1024}) {
        const std::vector<int> gpus =
            op == Op::kSendRecv ? std::vector<int>{0, n - 1} : FirstGpus(n);
        for (uint64_t bytes : kSizes) {
          if (!InGrid(op, algo, n, bytes)) continue;
          ExpectAgreement(topology, CollectiveSpec{op, algo, gpus, bytes});
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 100);
}

TEST(ClosedFormGridTest, AgreesOnPerNodeNicAndOversubscribedTree) {
  TopologySpec spec;
  spec.nodes = 16;
  spec.nics_per_node = 1;
  spec.rail_optimized = false;
  spec.nodes_per_leaf = 4;
  spec.oversubscription = 2.0;
  const Topology topology = Topology::Build(spec).value();
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kBroadcast, Op::kAllToAll}) {
    for (Algo algo : AlgorithmsFor(op)) {
      for (uint64_t bytes : {uint64_t{8}, uint64_t{16} << 20, uint64_t{1} << 30}) {
        ExpectAgreement(topology, CollectiveSpec{op, algo, FirstGpus(128), bytes});
      }
    }
  }
}

}  // namespace
}  // namespace trainsim::comm
