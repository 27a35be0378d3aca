// ParallelFor gives what one thread gives: every index once, the lowest index's error, the
// lowest index's exception, per-index results identical across thread counts (sim/parallel.h).
#include "sim/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/random.h"

namespace trainsim::sim {
namespace {

TEST(ParallelForTest, EveryIndexRunsExactlyOnceOnAnyThreadCount) {
  for (int threads : {1, 2, 3, 8, 64}) {
    std::vector<std::atomic<int>> seen(1000);
    Status s = ParallelFor(1000, threads, [&](int64_t i) {
      seen[i].fetch_add(1);
      return Status::Ok();
    });
    ASSERT_TRUE(s.ok());
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << i << " " << threads;
  }
}

TEST(ParallelForTest, ZeroItemsIsOkAndCallsNothing) {
  int calls = 0;
  EXPECT_TRUE(ParallelFor(0, 4, [&](int64_t) {
                ++calls;
                return Status::Ok();
              }).ok());
  EXPECT_EQ(calls, 0);
}

TEST(ParallelForTest, TheLowestFailingIndexsErrorIsReturned) {
  // Indices 700 and 300 fail; one thread in order stops at 300, so every thread count must say 300.
  for (int threads : {1, 2, 4, 16}) {
    Status s = ParallelFor(1000, threads, [](int64_t i) {
      if (i == 700 || i == 300) return Status::InvalidArgument("item " + std::to_string(i));
      return Status::Ok();
    });
    EXPECT_EQ(s.message(), "item 300") << threads;
  }
}

TEST(ParallelForTest, AnExceptionReachesTheCallerAfterAllThreadsJoin) {
  for (int threads : {1, 4}) {
    EXPECT_THROW((void)ParallelFor(100, threads,
                                   [](int64_t i) -> Status {
                                     if (i == 42) throw std::length_error("too long");
                                     return Status::Ok();
                                   }),
                 std::length_error);
  }
}

TEST(ParallelForTest, PerIndexRandomStreamsGiveTheSameResultsOnAnyThreadCount) {
  auto draw = [](int threads) {
    std::vector<double> out(257);
    Status s = ParallelFor(257, threads, [&](int64_t i) {
      Rng rng(12345 + 7919 * static_cast<uint64_t>(i));
      double sum = 0;
      for (int k = 0; k < 100; ++k) sum += rng.Uniform();
      out[i] = sum;
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok());
    return out;
  };
  const std::vector<double> one = draw(1);
  EXPECT_EQ(draw(2), one);
  EXPECT_EQ(draw(7), one);
}

TEST(ResolveThreadsTest, ZeroMeansAllCoresAndOutOfRangeIsAnErrorNamingTheOption) {
  Result<int> all = ResolveThreads(0);
  ASSERT_TRUE(all.ok());
  EXPECT_GE(*all, 1);
  EXPECT_EQ(*ResolveThreads(3), 3);
  Result<int> bad = ResolveThreads(-1, "--threads");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--threads"), std::string::npos);
  EXPECT_FALSE(ResolveThreads(kMaxThreads + 1).ok());
}

}  // namespace
}  // namespace trainsim::sim
