// NVLS, NVLS-tree, CollNet (IB SHARP), PAT and Ethernet up-links: closed forms derived here from
// the traffic each algorithm puts on a link, NCCL's enabling rules, and the closed form against
// the flow expansion. Published bus bandwidths are in published_busbw_test.cc.
#include <cmath>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/flow_network.h"
#include "comm/topology.h"
#include "comm/tree.h"
#include "gtest/gtest.h"
#include "sim/engine.h"

namespace trainsim::comm {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// DGX H100 nodes (the TopologySpec defaults) with NVLink SHARP as scenarios turn it on for Hopper.
TopologySpec H100Spec(int nodes) {
  TopologySpec spec;
  spec.nodes = nodes;
  spec.nvls = true;
  spec.nvls_efficiency = 0.85;  // tuning.cc nvlsEfficiency, Hopper
  return spec;
}

Topology Build(const TopologySpec& spec) { return Topology::Build(spec).value(); }

double Seconds(const Topology& t, Op op, Algo algo, const std::vector<int>& gpus, uint64_t bytes) {
  Result<CollectiveEstimate> e = EstimateCollective(t, CollectiveSpec{op, algo, gpus, bytes});
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? e->time.seconds() : 0;
}

double BusBwGBps(Op op, int n, uint64_t bytes, double seconds) {
  return static_cast<double>(bytes) / seconds / 1e9 * BusBandwidthFactor(op, n);
}

double Expand(const Topology& t, const CollectiveSpec& spec) {
  sim::Engine engine;
  FlowNetwork network(&engine, &t);
  double done = -1;
  EXPECT_TRUE(RunCollective(&network, spec, [&] { done = engine.now().seconds(); }).ok());
  engine.Run();
  return done;
}

std::vector<int> OnePerNode(int nodes, int gpus_per_node, int local) {
  std::vector<int> gpus;
  for (int v = 0; v < nodes; ++v) gpus.push_back(v * gpus_per_node + local);
  return gpus;
}

TEST(NvlsTest, AllReduceMovesMPlusOneShardsPerGpuAtTheNvlsShareOfNvlink) {
  // Inside one node of m GPUs the switch reads every GPU's whole buffer (m shards of S/m) and
  // each GPU stores its reduced shard once to the multicast address: (m+1)·S/m per direction
  // per GPU, at nvls_efficiency of the NVLink bandwidth the ring gets; latency 25 us (tuning.cc
  // NVLS NVLink latency, no base latency).
  const Topology t = Build(H100Spec(1));
  const double nvls_Bps = 450e9 * 0.80 * 0.85;
  for (int m : {2, 4, 8}) {
    const uint64_t bytes = 8 * kGiB;
    const double expected = 25e-6 + (m + 1) * std::ceil(static_cast<double>(bytes) / m) / nvls_Bps;
    EXPECT_NEAR(Seconds(t, Op::kAllReduce, Algo::kNvls, FirstGpus(m), bytes), expected,
                1e-6 * expected)
        << m << " GPUs";
  }
}

TEST(NvlsTest, AutoPicksNvlsForLargeAllReducesInsideADgxH100AndTheRingStays) {
  const Topology t = Build(H100Spec(1));
  for (uint64_t bytes : {16 * kMiB, 256 * kMiB, 8 * kGiB}) {
    const CollectiveSpec spec{Op::kAllReduce, Algo::kAuto, FirstGpus(8), bytes};
    EXPECT_EQ(EstimateCollective(t, spec)->algo, Algo::kNvls) << bytes;
  }
  // Small messages stay on the ring's LL protocol (NVLS pays 25 us, LL 6.6 + 14 × 0.6 us).
  EXPECT_EQ(EstimateCollective(t, {Op::kAllReduce, Algo::kAuto, FirstGpus(8), 8})->algo,
            Algo::kRing);
  // The ring itself is unchanged by NVLS being available: 2(n−1)/n · S at 360 GB/s.
  const double ring = BusBwGBps(Op::kAllReduce, 8, 8 * kGiB,
                                Seconds(t, Op::kAllReduce, Algo::kRing, FirstGpus(8), 8 * kGiB));
  EXPECT_GT(ring, 355);
  EXPECT_LT(ring, 370);
}

TEST(NvlsTest, NoNvlsWithoutNvlinkSharpAsOnA100) {
  TopologySpec a100;  // DGX A100: NVLink 3 through NVSwitch 2, no NVLS
  a100.nodes = 1;
  a100.nvlink_GBps = 300;
  a100.nic_Gbps = 200;
  const Topology t = Build(a100);
  for (uint64_t bytes : {8 * kMiB, 8 * kGiB}) {
    EXPECT_EQ(EstimateCollective(t, {Op::kAllReduce, Algo::kAuto, FirstGpus(8), bytes})->algo,
              Algo::kRing);
  }
  Result<CollectiveEstimate> forced =
      EstimateCollective(t, {Op::kAllReduce, Algo::kNvls, FirstGpus(8), kGiB});
  ASSERT_FALSE(forced.ok());
  EXPECT_NE(forced.status().message().find("NVLink SHARP"), std::string::npos);
}

TEST(NvlsTest, NvlsAcrossNodesNeedsSharpAndNvlsTreeOneNodeIsRefused) {
  const Topology t = Build(H100Spec(2));
  EXPECT_FALSE(EstimateCollective(t, {Op::kAllReduce, Algo::kNvls, FirstGpus(16), kGiB}).ok());
  EXPECT_FALSE(EstimateCollective(t, {Op::kAllReduce, Algo::kNvlsTree, FirstGpus(8), kGiB}).ok());
  EXPECT_FALSE(
      EstimateCollective(t, {Op::kAllReduce, Algo::kNvlsTree, {0, 1, 8}, kGiB}).ok());  // 2 + 1
}

TEST(NvlsTreeTest, BoundByTheBusiestNicOfTheDoubleBinaryTree) {
  // Heads (one per rail) exchange half a shard c = S/8 per tree edge each way. A node's NIC
  // carries c/2 per tree edge it touches, over both trees; the NVLink side carries (8+1)·c at the
  // NVLS share. Latency: 25 us + 2·⌊log2 N⌋ network hops of 20.9 us (tuning.cc NVLS_TREE).
  for (int nodes : {2, 16}) {
    const Topology t = Build(H100Spec(nodes));
    int worst_edges = 0;
    for (int v = 0; v < nodes; ++v) {
      int edges = 0;
      for (int which = 0; which < 2; ++which) {
        const std::vector<int> parent = DoubleBinaryTreeParents(nodes, which);
        for (int u = 0; u < nodes; ++u) edges += parent[static_cast<size_t>(u)] == v ? 1 : 0;
        edges += parent[static_cast<size_t>(v)] >= 0 ? 1 : 0;
      }
      worst_edges = std::max(worst_edges, edges);
    }
    const uint64_t bytes = 8 * kGiB;
    const double c = static_cast<double>(bytes) / 8;
    const double nic = worst_edges * (c / 2) / (400e9 / 8 * 0.96);
    const double nvlink = 9 * c / (450e9 * 0.80 * 0.85);
    const double depth = std::floor(std::log2(nodes));
    const double expected = 25e-6 + 2 * depth * 20.9e-6 + std::max(nic, nvlink);
    const double got = Seconds(t, Op::kAllReduce, Algo::kNvlsTree, FirstGpus(8 * nodes), bytes);
    EXPECT_NEAR(got, expected, 1e-6 * expected) << nodes << " nodes";
  }
}

TEST(NvlsTreeTest, AutoPicksNvlsTreeForLargeAllReducesAcrossDgxH100Nodes) {
  // Ring across nodes is NVLink-bound (PXN: 8 flows per GPU's NVLink); NVLS-tree's NICs carry
  // 2·S/8 and its NVLink 9/8·S at the NVLS share, so it is faster for large messages.
  const Topology t = Build(H100Spec(16));
  const CollectiveSpec spec{Op::kAllReduce, Algo::kAuto, FirstGpus(128), 8 * kGiB};
  EXPECT_EQ(EstimateCollective(t, spec)->algo, Algo::kNvlsTree);
  EXPECT_EQ(EstimateCollective(t, {Op::kAllReduce, Algo::kAuto, FirstGpus(128), 8})->algo,
            Algo::kTree);
}

TEST(CollNetTest, SharpOnlyWhenTheSwitchesHaveIt) {
  TopologySpec spec = H100Spec(4);
  const std::vector<int> rail = OnePerNode(4, 8, 0);
  Topology plain = Build(spec);
  EXPECT_FALSE(EstimateCollective(plain, {Op::kAllReduce, Algo::kCollNet, rail, kGiB}).ok());
  for (uint64_t bytes : {uint64_t{8}, kMiB, 8 * kGiB}) {
    const Algo a = EstimateCollective(plain, {Op::kAllReduce, Algo::kAuto, rail, bytes})->algo;
    EXPECT_NE(a, Algo::kCollNet);
  }
  spec.sharp = true;
  Topology sharp = Build(spec);
  EXPECT_TRUE(EstimateCollective(sharp, {Op::kAllReduce, Algo::kCollNet, rail, kGiB}).ok());
  EXPECT_EQ(EstimateCollective(sharp, {Op::kAllReduce, Algo::kAuto, rail, 8 * kGiB})->algo,
            Algo::kCollNet);
}

TEST(CollNetTest, SharpHalvesTheBytesANicSends) {
  // One GPU per node: the ring sends 2(N−1)/N · S through each NIC; with SHARP each NIC sends S
  // once up and receives the result (CollNet latency: 31 us network + 0 base).
  const int nodes = 16;
  TopologySpec spec = H100Spec(nodes);
  spec.sharp = true;
  const Topology t = Build(spec);
  const std::vector<int> rail = OnePerNode(nodes, 8, 2);
  const uint64_t bytes = 8 * kGiB;
  const double nic_Bps = 400e9 / 8 * 0.96;
  const double collnet = Seconds(t, Op::kAllReduce, Algo::kCollNet, rail, bytes);
  EXPECT_NEAR(collnet, 31e-6 + static_cast<double>(bytes) / nic_Bps, 1e-6 * collnet);
  const double ring = Seconds(t, Op::kAllReduce, Algo::kRing, rail, bytes);
  EXPECT_NEAR(ring / collnet, 2.0 * (nodes - 1) / nodes, 0.02);
}

TEST(CollNetTest, NvlsWithSharpAcrossNodesBeatsTheRingOnDgxH100) {
  TopologySpec spec = H100Spec(4);
  spec.sharp = true;
  const Topology t = Build(spec);
  const CollectiveSpec spec8g{Op::kAllReduce, Algo::kAuto, FirstGpus(32), 8 * kGiB};
  EXPECT_EQ(EstimateCollective(t, spec8g)->algo, Algo::kNvls);
}

TEST(PatTest, OneGpuPerNodeOnlyAndItsClosedForm) {
  // Bruck steps at distances 1, 2, 4, …: n−1 blocks of S/n in all, at tuning.cc's 0.75 of the
  // NIC's bandwidth; latency 8 us base + ⌊log2 n⌋ · 14 us / 3.5 + n · 2.8 us.
  const int nodes = 64;
  const Topology t = Build(H100Spec(nodes));
  const std::vector<int> rail = OnePerNode(nodes, 8, 5);
  const uint64_t bytes = kGiB;
  const double block = std::ceil(static_cast<double>(bytes) / nodes);
  const double expected =
      8e-6 + 6 * 14e-6 / 3.5 + nodes * 2.8e-6 + (nodes - 1) * block / (0.75 * 400e9 / 8 * 0.96);
  for (Op op : {Op::kAllGather, Op::kReduceScatter}) {
    EXPECT_NEAR(Seconds(t, op, Algo::kPat, rail, bytes), expected, 1e-6 * expected);
  }
  EXPECT_FALSE(EstimateCollective(t, {Op::kAllGather, Algo::kPat, FirstGpus(16), kGiB}).ok());
  EXPECT_FALSE(EstimateCollective(t, {Op::kAllReduce, Algo::kPat, rail, kGiB}).ok());
}

TEST(PatTest, AutoPicksPatAtScaleWhereTheRingsLatencyDominates) {
  // 512 nodes, one GPU each: the ring pays 511 network hops (LL128: 4 us each), PAT
  // 8 + 9·4 + 512·2.8 us; at 64 MiB that outweighs PAT's 0.75 bandwidth factor, at 4 GiB not.
  const int nodes = 512;
  const Topology t = Build(H100Spec(nodes));
  const std::vector<int> rail = OnePerNode(nodes, 8, 0);
  EXPECT_EQ(EstimateCollective(t, {Op::kAllGather, Algo::kAuto, rail, 64 * kMiB})->algo,
            Algo::kPat);
  EXPECT_EQ(EstimateCollective(t, {Op::kAllGather, Algo::kAuto, rail, 4 * kGiB})->algo,
            Algo::kRing);
  // Two GPUs per node: NCCL disables PAT.
  std::vector<int> two = rail;
  two.push_back(1);
  EXPECT_NE(EstimateCollective(t, {Op::kAllGather, Algo::kAuto, two, 64 * kMiB})->algo, Algo::kPat);
}

TEST(EthernetTest, EcmpUplinksSlowTrafficThatCrossesTheSpine) {
  // 4 nodes, 2 per leaf group, all-to-all: the leaf up-link is the bottleneck when it is
  // oversubscribed; with ECMP hashing only 1 − 1/e of it carries traffic, so the up-link-bound
  // all-to-all takes e/(e−1) as long.
  auto time = [](double uplink_efficiency) {
    TopologySpec spec;
    spec.nodes = 4;
    spec.nodes_per_leaf = 2;
    spec.oversubscription = 2.0;
    spec.uplink_efficiency = uplink_efficiency;
    const Topology t = Build(spec);
    return Seconds(t, Op::kAllToAll, Algo::kDirect, FirstGpus(32), kGiB);
  };
  const double ecmp = 1.0 - std::exp(-1.0);
  EXPECT_NEAR(time(ecmp) / time(1.0), 1.0 / ecmp, 0.02);
}

TEST(SwitchAlgorithmsTest, ExpansionAgreesWithTheClosedForm) {
  TopologySpec spec = H100Spec(4);
  spec.sharp = true;
  const Topology t = Build(spec);
  const std::vector<int> rail = OnePerNode(4, 8, 3);
  const std::vector<CollectiveSpec> cases = {
      {Op::kAllReduce, Algo::kNvls, FirstGpus(8), kGiB},
      {Op::kAllReduce, Algo::kNvls, FirstGpus(6), 64 * kMiB},
      {Op::kAllReduce, Algo::kNvls, FirstGpus(32), kGiB},
      {Op::kAllReduce, Algo::kNvlsTree, FirstGpus(32), kGiB},
      {Op::kAllReduce, Algo::kNvlsTree, FirstGpus(16), 8},
      {Op::kAllReduce, Algo::kCollNet, FirstGpus(32), kGiB},
      {Op::kAllReduce, Algo::kCollNet, rail, 16 * kMiB},
      {Op::kAllGather, Algo::kPat, rail, kGiB},
      {Op::kReduceScatter, Algo::kPat, {0, 8, 16}, 3 * kMiB},
  };
  for (const CollectiveSpec& c : cases) {
    const double closed = Seconds(t, c.op, c.algo, c.gpus, c.bytes);
    EXPECT_NEAR(Expand(t, c), closed, 0.01 * closed)
        << AlgoName(c.algo) << " n=" << c.gpus.size() << " bytes=" << c.bytes;
  }
}

}  // namespace
}  // namespace trainsim::comm
