#include "sim/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace trainsim::sim {
namespace {

TEST(StatsTest, LinearInterpolationPercentilesOnHandComputedSample) {
  // x = 1..10, n = 10, h = 9p:
  //   p50: h = 4.5  -> x[4] + 0.5 (x[5] - x[4]) = 5 + 0.5 = 5.5
  //   p90: h = 8.1  -> x[8] + 0.1 (x[9] - x[8]) = 9 + 0.1 = 9.1
  //   p99: h = 8.91 -> 9 + 0.91 = 9.91
  //   p10: h = 0.9  -> x[0] + 0.9 (x[1] - x[0]) = 1.9
  //   p1:  h = 0.09 -> 1 + 0.09 = 1.09
  // mean 5.5; sample variance sum((x - 5.5)^2) / 9 = 82.5 / 9.
  Result<Summary> r = Summarize({7, 3, 10, 1, 5, 9, 2, 8, 4, 6});  // order must not matter
  ASSERT_TRUE(r.ok());
  const Summary& s = r.value();
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.p99, 9.91);
  EXPECT_DOUBLE_EQ(s.p10, 1.9);
  EXPECT_DOUBLE_EQ(s.p1, 1.09);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(82.5 / 9));
  EXPECT_DOUBLE_EQ(s.ci95_half_width, 1.96 * std::sqrt(82.5 / 9) / std::sqrt(10.0));
}

TEST(StatsTest, OddCountMedianIsTheMiddleValueAndSmallSamplesInterpolate) {
  // {10, 20, 40}: h(p50) = 1 -> 20; h(p90) = 1.8 -> 20 + 0.8 * 20 = 36; h(p99) = 1.98 -> 39.6.
  Result<Summary> r = Summarize({40, 10, 20});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->p50, 20);
  EXPECT_DOUBLE_EQ(r->p90, 36);
  EXPECT_DOUBLE_EQ(r->p99, 39.6);
}

TEST(StatsTest, SingleSampleHasZeroSpread) {
  Result<Summary> r = Summarize({4.25});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->mean, 4.25);
  EXPECT_DOUBLE_EQ(r->p50, 4.25);
  EXPECT_DOUBLE_EQ(r->p99, 4.25);
  EXPECT_EQ(r->stddev, 0);
  EXPECT_EQ(r->ci95_half_width, 0);
}

TEST(StatsTest, PercentileEndpointsAreMinAndMax) {
  const std::vector<double> sorted = {1, 2, 4, 8};
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 0), 1);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 1), 8);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 0.5), 3);  // h = 1.5
}

TEST(StatsTest, ResultDoesNotDependOnSampleOrder) {
  std::vector<double> a;
  for (int i = 0; i < 1000; ++i) a.push_back(std::sin(i) * 1e6 + 1.0 / (i + 1));
  std::vector<double> b(a.rbegin(), a.rend());
  std::rotate(b.begin(), b.begin() + 337, b.end());
  Summary sa = Summarize(a).value(), sb = Summarize(b).value();
  // Bitwise equal, not merely close.
  EXPECT_EQ(sa.mean, sb.mean);
  EXPECT_EQ(sa.stddev, sb.stddev);
  EXPECT_EQ(sa.p99, sb.p99);
}

TEST(StatsTest, EmptyAndNonFiniteSamplesAreErrors) {
  EXPECT_EQ(Summarize({}).status().code(), Status::Code::kInvalidArgument);
  Result<Summary> r = Summarize({1, std::nan(""), 3});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sample 1"), std::string::npos);
  EXPECT_FALSE(Summarize({std::numeric_limits<double>::infinity()}).ok());
}

}  // namespace
}  // namespace trainsim::sim
