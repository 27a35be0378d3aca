#include <gtest/gtest.h>

#include <map>
#include <set>

#include "parallelism/layout.h"
#include "parallelism/schedule.h"

namespace trainsim::parallelism {
namespace {

ModelSpec Small() {
  ModelSpec m;
  m.num_layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.seq_len = 2048;
  m.vocab = 51200;
  return m;
}

TEST(LayoutTest, TensorParallelIsInnermostThenDataThenPipeline) {
  ParallelConfig c;
  c.tp = 8;
  c.pp = 4;
  c.dp = 4;
  Layout layout(c, 8);
  // 37 = tp 5 + 8·(dp 0 + 4·pp 1).
  EXPECT_EQ(layout.CoordOf(37), (RankCoord{5, 1, 0}));
  EXPECT_EQ(layout.NodeOf(37), 4);
  EXPECT_EQ(layout.TpGroup(37), (std::vector<int>{32, 33, 34, 35, 36, 37, 38, 39}));
  EXPECT_EQ(layout.DpGroup(37), (std::vector<int>{37, 45, 53, 61}));
  EXPECT_EQ(layout.PpGroup(5), (std::vector<int>{5, 37, 69, 101}));
  for (int g = 0; g < layout.num_gpus(); ++g) EXPECT_EQ(layout.GpuOf(layout.CoordOf(g)), g);
  EXPECT_NE(layout.Describe(37).find("node 4"), std::string::npos);
}

TEST(LayoutTest, ExplainsLayoutsThatCannotRun) {
  ParallelConfig c;
  c.tp = 8;
  c.pp = 3;  // 32 layers do not split into 3 stages
  c.dp = 1;
  c.global_batch = 8;
  Status st = ValidateLayout(Small(), c, 24, 8);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("32 layers"), std::string::npos) << st.message();
  c.pp = 4;
  EXPECT_FALSE(ValidateLayout(Small(), c, 64, 8).ok());  // 8·4·1 ≠ 64
  c.tp = 16;
  c.dp = 1;
  c.pp = 4;
  EXPECT_FALSE(ValidateLayout(Small(), c, 64, 8).ok());  // TP across nodes
  c.tp = 8;
  c.micro_batch = 2;
  c.global_batch = 7;
  EXPECT_FALSE(ValidateLayout(Small(), c, 32, 8).ok());
  c.global_batch = 8;
  EXPECT_TRUE(ValidateLayout(Small(), c, 32, 8).ok());
  ParallelConfig inter = c;
  inter.pp = 1;
  inter.dp = 4;
  inter.schedule = PipelineSchedule::kInterleaved1F1B;
  inter.virtual_stages = 2;
  EXPECT_FALSE(ValidateLayout(Small(), inter, 32, 8).ok());  // nothing to interleave
}

TEST(ScheduleTest, EveryRankRunsEachForwardAndBackwardOnceInOrder) {
  for (PipelineSchedule s :
       {PipelineSchedule::kGpipe, PipelineSchedule::k1F1B, PipelineSchedule::kInterleaved1F1B}) {
    const int p = 4, v = s == PipelineSchedule::kInterleaved1F1B ? 2 : 1;
    const int64_t m = 8;
    const auto orders = BuildSchedule(s, p, v, m);
    ASSERT_EQ(orders.size(), 4u);
    for (const auto& order : orders) {
      EXPECT_EQ(order.size(), size_t(2 * m * v));
      std::set<std::pair<int, int>> done_f, done_b;
      for (const Task& t : order) {
        auto key = std::make_pair(t.micro_batch, t.chunk);
        if (t.forward) {
          EXPECT_TRUE(done_f.insert(key).second);
        } else {
          EXPECT_TRUE(done_f.count(key));  // backward after its forward
          EXPECT_TRUE(done_b.insert(key).second);
        }
      }
      EXPECT_EQ(done_b.size(), size_t(m * v));
    }
  }
}

TEST(ScheduleTest, InFlightMicroBatchesMatchTheSchedules) {
  const int p = 4;
  const int64_t m = 8;
  auto one_f1b = BuildSchedule(PipelineSchedule::k1F1B, p, 1, m);
  for (int r = 0; r < p; ++r) EXPECT_EQ(PeakChunksInFlight(one_f1b[r]), p - r);
  auto gpipe = BuildSchedule(PipelineSchedule::kGpipe, p, 1, m);
  EXPECT_EQ(PeakChunksInFlight(gpipe[0]), m);
  const int v = 3;
  auto inter = BuildSchedule(PipelineSchedule::kInterleaved1F1B, p, v, m);
  EXPECT_EQ(PeakChunksInFlight(inter[0]), (v + 1) * p - 1);
  // 1F1B: rank 0 starts with p − 1 warm-up forwards, then alternates.
  EXPECT_TRUE(one_f1b[0][3].forward);
  EXPECT_FALSE(one_f1b[0][4].forward);
  EXPECT_EQ(one_f1b[p - 1][1], (Task{false, 0, 0}));
}

}  // namespace
}  // namespace trainsim::parallelism
