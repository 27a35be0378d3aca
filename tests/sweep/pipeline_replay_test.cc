// The estimator's task-by-task replay of a pipeline schedule (sweep/pipeline_replay.h) against
// closed forms. Its agreement with the step simulation is tests/sweep/estimator_test.cc's.
#include "sweep/pipeline_replay.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace trainsim::sweep {
namespace {

parallelism::ParallelConfig Interleaved(int pp, int v, int64_t m, bool overlap_p2p) {
  parallelism::ParallelConfig c;
  c.pp = pp;
  c.dp = 1;
  c.micro_batch = 1;
  c.global_batch = m;
  c.schedule = parallelism::PipelineSchedule::kInterleaved1F1B;
  c.virtual_stages = v;
  c.overlap_p2p = overlap_p2p;
  return c;
}

double End(const PipelineReplay& r) {
  return *std::max_element(r.compute_done_s.begin(), r.compute_done_s.end());
}

// Uniform chunks (forward f, backward b), free sends: interleaved 1F1B takes m·v passes of
// (f + b) plus a bubble of (p − 1) chunk passes (Narayanan et al. 2021, §2.2.2) — also past
// the replayed periods, where the replay extends linearly.
TEST(PipelineReplayTest, UniformInterleavedScheduleTakesWorkPlusTheBubble) {
  for (int64_t m : {4, 8, 12, 32}) {
    const int p = 4, v = 2;
    const std::vector<ReplayPass> passes(size_t(p * v), ReplayPass{0, 1.0, 2.0});
    const PipelineReplay r = ReplayPipeline(Interleaved(p, v, m, true), passes, 0.0);
    EXPECT_DOUBLE_EQ(End(r), double(m * v + p - 1) * 3.0) << "m = " << m;
  }
}

// Blocking sends cost at least their transfer on both ends of every boundary, so the schedule
// can only get longer; and each rank's last backward of each chunk is a bucket pass.
TEST(PipelineReplayTest, BlockingSendsOnlyLengthenTheScheduleAndBucketsFollowLastBackwards) {
  const int p = 4, v = 2;
  const int64_t m = 32;
  const std::vector<ReplayPass> passes(size_t(p * v), ReplayPass{0, 1.0, 2.0});
  const PipelineReplay free_sends = ReplayPipeline(Interleaved(p, v, m, true), passes, 0.1);
  const PipelineReplay blocking = ReplayPipeline(Interleaved(p, v, m, false), passes, 0.1);
  EXPECT_GT(End(blocking), End(free_sends));
  EXPECT_GT(End(free_sends), double(m * v + p - 1) * 3.0);
  parallelism::ParallelConfig with_dp = Interleaved(p, v, m, false);
  with_dp.dp = 2;
  with_dp.global_batch = 2 * m;
  const PipelineReplay r = ReplayPipeline(with_dp, passes, 0.1);
  for (int rank = 0; rank < p; ++rank) {
    ASSERT_EQ(r.bucket_passes[size_t(rank)].size(), size_t(v)) << rank;
    for (const auto& [start, dur] : r.bucket_passes[size_t(rank)]) {
      EXPECT_DOUBLE_EQ(dur, 2.0);
      EXPECT_LE(start + dur, r.compute_done_s[size_t(rank)] + 1e-9);
    }
  }
}

}  // namespace
}  // namespace trainsim::sweep
