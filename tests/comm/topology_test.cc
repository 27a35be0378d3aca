#include "comm/topology.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace trainsim::comm {
namespace {

Topology Dgx(int nodes, double oversubscription = 1.0, int levels = 2, int nodes_per_leaf = 32) {
  TopologySpec spec;
  spec.nodes = nodes;
  spec.oversubscription = oversubscription;
  spec.fat_tree_levels = levels;
  spec.nodes_per_leaf = nodes_per_leaf;
  return Topology::Build(spec).value();
}

bool Contains(const std::vector<LinkId>& path, LinkId id) {
  return std::find(path.begin(), path.end(), id) != path.end();
}

TEST(TopologyTest, IntraNodeRouteIsNvlinkUpThenDown) {
  const Topology t = Dgx(2);
  EXPECT_EQ(t.Route(1, 5), (std::vector<LinkId>{t.nvlink_up(1), t.nvlink_down(5)}));
  EXPECT_TRUE(t.Route(3, 3).empty());
}

TEST(TopologyTest, LinkBandwidthIsDatasheetTimesEfficiency) {
  const Topology t = Dgx(1);
  const Link& nvl = t.link(t.nvlink_up(0));
  EXPECT_EQ(nvl.kind, LinkKind::kNvlinkUp);
  EXPECT_DOUBLE_EQ(nvl.datasheet_Bps, 450e9);
  EXPECT_DOUBLE_EQ(nvl.bandwidth_Bps, 450e9 * 0.80);
  const Link& nic = t.link(t.nic_tx(0));
  EXPECT_DOUBLE_EQ(nic.datasheet_Bps, 400e9 / 8);  // 400 Gb/s NDR
  EXPECT_DOUBLE_EQ(nic.bandwidth_Bps, 50e9 * 0.96);
}

TEST(TopologyTest, SameRailCrossNodeRouteStaysBelowTheLeaf) {
  const Topology t = Dgx(4);
  // GPU 2 of node 0 to GPU 2 of node 3: rail 2 on both ends.
  const std::vector<LinkId> path = t.Route(2, 26);
  EXPECT_EQ(path,
            (std::vector<LinkId>{t.pcie_up(2), t.nic_tx(2), t.nic_rx(3 * 8 + 2), t.pcie_down(26)}));
}

TEST(TopologyTest, PxnMovesToTheDestinationRailOverNvlinkFirst) {
  const Topology t = Dgx(2);
  // GPU 7 (rail 7) of node 0 to GPU 8 (rail 0) of node 1: NVLink to GPU 0, then rail 0.
  const std::vector<LinkId> path = t.Route(7, 8);
  EXPECT_EQ(path, (std::vector<LinkId>{t.nvlink_up(7), t.nvlink_down(0), t.pcie_up(0), t.nic_tx(0),
                                       t.nic_rx(8), t.pcie_down(8)}));
  for (LinkId l : path) EXPECT_NE(t.link(l).kind, LinkKind::kLeafUp);
}

TEST(TopologyTest, WithoutPxnDifferentRailsCrossTheSpine) {
  TopologySpec spec;
  spec.nodes = 2;
  spec.pxn = false;
  const Topology t = Topology::Build(spec).value();
  const std::vector<LinkId> path = t.Route(7, 8);
  EXPECT_TRUE(Contains(path, t.leaf_up(t.leaf_of_nic(7))));
  EXPECT_TRUE(Contains(path, t.leaf_down(t.leaf_of_nic(8))));
}

TEST(TopologyTest, NodesUnderDifferentLeavesUseOversubscribedUplinks) {
  const Topology t = Dgx(4, /*oversubscription=*/2.0, 2, /*nodes_per_leaf=*/2);
  // Node 0 and node 2 are in different leaf groups.
  const std::vector<LinkId> path = t.Route(0, 16);
  const LinkId up = t.leaf_up(t.leaf_of_nic(0));
  ASSERT_TRUE(Contains(path, up));
  // Two nodes' rail-0 NICs under the leaf: 2 × 50 GB/s of down-links, halved.
  EXPECT_DOUBLE_EQ(t.link(up).datasheet_Bps, 2 * 50e9 / 2.0);
  // Nodes 0 and 1 share a leaf: no up-link.
  EXPECT_FALSE(Contains(t.Route(0, 8), up));
}

TEST(TopologyTest, ThreeLevelTreeCrossesTheCoreBetweenPods) {
  TopologySpec spec;
  spec.nodes = 8;
  spec.fat_tree_levels = 3;
  spec.nodes_per_leaf = 2;
  spec.leaves_per_pod = 2;  // pods of 4 nodes per rail
  const Topology t = Topology::Build(spec).value();
  auto count_kind = [&](const std::vector<LinkId>& path, LinkKind kind) {
    return std::count_if(path.begin(), path.end(),
                         [&](LinkId l) { return t.link(l).kind == kind; });
  };
  EXPECT_EQ(count_kind(t.Route(0, 2 * 8), LinkKind::kSpineUp), 0);  // same pod
  EXPECT_EQ(count_kind(t.Route(0, 4 * 8), LinkKind::kSpineUp), 1);  // other pod
  EXPECT_EQ(count_kind(t.Route(0, 4 * 8), LinkKind::kSpineDown), 1);
}

TEST(TopologyTest, OneNicPerNodeIsSharedByAllGpus) {
  TopologySpec spec;
  spec.nodes = 2;
  spec.nics_per_node = 1;
  spec.rail_optimized = false;
  const Topology t = Topology::Build(spec).value();
  for (int g = 0; g < 8; ++g) EXPECT_EQ(t.global_nic_of(g), 0);
  EXPECT_TRUE(Contains(t.Route(5, 13), t.nic_tx(0)));
  EXPECT_TRUE(Contains(t.Route(3, 9), t.nic_tx(0)));
}

TEST(TopologyTest, HostRouteIsThePciLink) {
  const Topology t = Dgx(1);
  EXPECT_EQ(t.HostRoute(3), (std::vector<LinkId>{t.pcie_up(3)}));
  EXPECT_EQ(t.link(t.pcie_up(3)).kind, LinkKind::kPcieUp);
}

TEST(TopologyTest, RejectsInvalidSpecsWithTheFieldName) {
  TopologySpec spec;
  spec.fat_tree_levels = 4;
  Result<Topology> r = Topology::Build(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fat_tree_levels"), std::string::npos);
  spec = TopologySpec{};
  spec.oversubscription = 0.5;
  EXPECT_FALSE(Topology::Build(spec).ok());
  spec = TopologySpec{};
  spec.nics_per_node = 9;
  EXPECT_FALSE(Topology::Build(spec).ok());
  spec = TopologySpec{};
  spec.nodes = 0;
  EXPECT_FALSE(Topology::Build(spec).ok());
}

}  // namespace
}  // namespace trainsim::comm
