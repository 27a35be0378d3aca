#include "checkpoint/checkpoint_model.h"

#include <gtest/gtest.h>

namespace trainsim::checkpoint {
namespace {

TEST(YoungDalyTest, YoungMatchesHandComputedValue) {
  // sqrt(2 · 60 · 3600) = sqrt(432000) = 657.267...
  EXPECT_NEAR(YoungIntervalSeconds(60, 3600), 657.2671, 1e-3);
}

TEST(YoungDalyTest, DalyMatchesHandComputedValues) {
  // δ/2M = 60/7200 = 1/120: 657.267 · (1 + 0.0912871/3 + 0.0083333/9) − 60 = 617.876.
  EXPECT_NEAR(DalyIntervalSeconds(60, 3600), 617.8756, 1e-3);
  // δ/2M = 1800/21600 = 1/12: 6235.383 · (1 + 0.2886751/3 + 0.0833333/9) − 1800 = 5093.118.
  EXPECT_NEAR(DalyIntervalSeconds(1800, 10800), 5093.1179, 1e-3);
}

TEST(YoungDalyTest, DalyIsMtbfWhenCheckpointCostsTwiceTheMtbf) {
  EXPECT_EQ(DalyIntervalSeconds(7200, 3600), 3600);
  EXPECT_EQ(DalyIntervalSeconds(9000, 3600), 3600);
}

TEST(YoungDalyTest, DalyUsefulFractionMatchesHandComputedValue) {
  // e^(−300/3600) · (600/3600) / (e^(660/3600) − 1) = 0.920044 · 0.166667 / 0.201215 = 0.762075.
  EXPECT_NEAR(DalyUsefulFraction(600, 60, 3600, 300), 0.762075, 1e-6);
}

CheckpointHardware Hw() {
  CheckpointHardware hw;
  hw.nodes = 16;
  hw.gpus_per_node = 8;
  hw.node_net_GBps = 50;
  hw.host_copy_GBps_per_gpu = 25;
  hw.storage_write_GBps = 100;
  hw.storage_read_GBps = 400;
  hw.peer_copy_share = 0.5;
  return hw;
}

TEST(CheckpointCostsTest, SizeIsParametersTimesFourteenBytesByDefault) {
  CheckpointSpec spec;
  spec.parameters = 175'000'000'000;
  Result<CheckpointCosts> c = ComputeCheckpointCosts(spec, Hw());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->size_bytes, 2.45e12);
  EXPECT_DOUBLE_EQ(c->bytes_per_node, 2.45e12 / 16);
}

TEST(CheckpointCostsTest, WriteIsLimitedByStorageOrByNodes) {
  CheckpointSpec spec;
  spec.parameters = 175'000'000'000;
  // Storage-bound: 16 nodes × min(50, 8 × 25) = 800 GB/s > 100 GB/s → 2.45e12 / 100e9 = 24.5 s.
  EXPECT_EQ(ComputeCheckpointCosts(spec, Hw())->persistent_write, sim::Time::Millis(24500));
  // Node-bound: 2 writer nodes × 50 GB/s = 100 GB/s is the limit when storage does 1000.
  CheckpointHardware hw = Hw();
  hw.storage_write_GBps = 1000;
  spec.writer_nodes = 1;
  EXPECT_EQ(ComputeCheckpointCosts(spec, hw)->persistent_write, sim::Time::Seconds(49));
  // Load: min(400, 16 × 50) = 400 GB/s → 6.125 s.
  EXPECT_EQ(ComputeCheckpointCosts(spec, hw)->storage_load, sim::Time::Micros(6125000));
}

TEST(CheckpointCostsTest, SnapshotAndPeerCopyUsePerNodeShares) {
  CheckpointSpec spec;
  spec.parameters = 8'000'000'000;  // 112 GB; 7 GB per node; 0.875 GB per GPU
  Result<CheckpointCosts> c = ComputeCheckpointCosts(spec, Hw());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->snapshot, sim::Time::Millis(35));    // 0.875 GB / 25 GB/s
  EXPECT_EQ(c->peer_copy, sim::Time::Millis(280));  // 7 GB / (0.5 × 50 GB/s)
  EXPECT_EQ(c->peer_load, sim::Time::Millis(140));  // 7 GB / 50 GB/s
  // Background write: 100 GB/s over 16 writers = 6.25 GB/s of each node's 50 GB/s.
  EXPECT_DOUBLE_EQ(c->background_write_share, 0.125);
}

TEST(CheckpointCostsTest, RejectsNonsense) {
  CheckpointSpec spec;
  spec.parameters = 0;
  EXPECT_FALSE(ComputeCheckpointCosts(spec, Hw()).ok());
  spec.parameters = 1000;
  CheckpointHardware hw = Hw();
  hw.storage_write_GBps = 0;
  Result<CheckpointCosts> c = ComputeCheckpointCosts(spec, hw);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("write_GBps"), std::string::npos);
  spec.bytes_per_param = -1;
  EXPECT_FALSE(ComputeCheckpointCosts(spec, Hw()).ok());
}

// 1e-12 GB/s is positive and finite, so it passed validation; 2.45 TB / 1e-12 GB/s = 2.45e24 ns
// overflowed the double→int64 conversion ("write −106751.99 d", checkpoints reported complete).
TEST(CheckpointCostsTest, TinyStorageBandwidthIsRefusedWithTheFieldNotOverflowed) {
  CheckpointSpec spec;
  spec.parameters = 175'000'000'000;
  CheckpointHardware hw = Hw();
  hw.storage_write_GBps = 1e-12;
  Result<CheckpointCosts> c = ComputeCheckpointCosts(spec, hw);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("write_gbyte_per_s"), std::string::npos)
      << c.status().message();
  hw = Hw();
  hw.storage_read_GBps = 1e-300;
  c = ComputeCheckpointCosts(spec, hw);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("read_gbyte_per_s"), std::string::npos)
      << c.status().message();
}

TEST(TransferTimeTest, OutOfRangeIsNulloptCheckedAndNeverCompletesSaturated) {
  // 1 GB at 1 GB/s: exactly one second.
  EXPECT_EQ(TransferTimeChecked(1e9, 1), sim::Time::Seconds(1));
  // 2^63 ns ≈ 292 years; 1e9 bytes at 1e-12 GB/s is 1e21 ns.
  EXPECT_EQ(TransferTimeChecked(1e9, 1e-12), std::nullopt);
  EXPECT_EQ(TransferTimeChecked(1e9, 0), std::nullopt);  // inf
  EXPECT_TRUE(TransferTime(1e9, 1e-12).is_max());
  EXPECT_GT(TransferTime(1e9, 1e-12), sim::Time());
}

}  // namespace
}  // namespace trainsim::checkpoint
