#include "checkpoint/failure_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

namespace trainsim::checkpoint {
namespace {

TEST(FailureModelTest, DefaultMixIsLlama3Table5) {
  std::vector<FailureCause> causes = DefaultFailureCauses();
  ASSERT_EQ(causes.size(), 18u);
  double total = 0, software = 0;
  for (const FailureCause& c : causes) {
    total += c.weight;
    if (c.category == "software") {
      software += c.weight;
      EXPECT_FALSE(c.needs_replacement) << c.name;
      EXPECT_EQ(c.repair_time, sim::Time());
    } else {
      EXPECT_TRUE(c.needs_replacement) << c.name;
    }
  }
  EXPECT_EQ(total, 419);
  EXPECT_EQ(software, 54 + 7 + 2);
  EXPECT_NEAR(kLlama3NodeDayRate, 3.789e-3, 1e-6);
}

TEST(FailureModelTest, ValidateRejectsNegativeRateAndBadShape) {
  FailureModelConfig c;
  c.node_day_rate = -1;
  EXPECT_FALSE(c.Validate().ok());
  EXPECT_NE(c.Validate().message().find("node_day_rate"), std::string::npos);
  c.node_day_rate = 1e-3;
  c.weibull_shape = 0;
  EXPECT_FALSE(c.Validate().ok());
  c.weibull_shape = 1;
  c.causes = {FailureCause{"x", "GPU", 0, true, sim::Time()}};
  EXPECT_FALSE(c.Validate().ok());
}

TEST(FailureProcessTest, ExponentialSuperpositionHasNTimesTheRate) {
  FailureModelConfig c;
  c.node_day_rate = 0.01;
  const int nodes = 100;  // cluster MTBF = 1 day
  FailureProcess p(c, nodes, sim::RandomStreams(7).Stream("t"));
  EXPECT_DOUBLE_EQ(p.ClusterMtbfSeconds(), 86400.0);
  const int n = 40000;
  std::vector<int> per_node(nodes, 0);
  int faulty_gpu = 0;
  sim::Time last;
  for (int i = 0; i < n; ++i) {
    FailureProcess::Arrival a = p.Next();
    ASSERT_GE(a.at, last);
    last = a.at;
    ++per_node[a.node];
    if (p.causes()[a.cause].name == "Faulty GPU") ++faulty_gpu;
  }
  // Mean gap: 1 day ± 3/sqrt(n) relative (three standard errors).
  EXPECT_NEAR(last.seconds() / n / 86400.0, 1.0, 3.0 / std::sqrt(n));
  // Each node gets 1/100 of the failures (binomial sd ≈ sqrt(400) = 20; allow 5 sd).
  for (int k : per_node) EXPECT_NEAR(k, n / nodes, 100);
  // Faulty GPU is 148/419 of the mix.
  EXPECT_NEAR(double(faulty_gpu) / n, 148.0 / 419.0, 0.01);
}

TEST(FailureProcessTest, WeibullRenewalKeepsTheLongRunRate) {
  for (double shape : {0.8, 1.5}) {
    FailureModelConfig c;
    c.node_day_rate = 1.0;
    c.distribution = FailureDistribution::kWeibull;
    c.weibull_shape = shape;
    const int nodes = 8;
    FailureProcess p(c, nodes, sim::RandomStreams(11).Stream("t"));
    // Renewal theorem: N(t)/t → nodes / mean gap = 8 per day. Count over 5000 days.
    const double horizon_s = 5000 * 86400.0;
    int count = 0;
    while (p.Next().at.seconds() < horizon_s) ++count;
    EXPECT_NEAR(count / 5000.0, 8.0, 8.0 * 0.03) << "shape " << shape;
  }
}

TEST(FailureProcessTest, SameStreamGivesSameHistory) {
  FailureModelConfig c;
  FailureProcess a(c, 2048, sim::RandomStreams(5).Stream("trial/3/failures"));
  FailureProcess b(c, 2048, sim::RandomStreams(5).Stream("trial/3/failures"));
  for (int i = 0; i < 100; ++i) {
    FailureProcess::Arrival x = a.Next(), y = b.Next();
    EXPECT_EQ(x.at, y.at);
    EXPECT_EQ(x.node, y.node);
    EXPECT_EQ(x.cause, y.cause);
  }
}

TEST(FailureProcessTest, DisabledModelNeverFails) {
  FailureModelConfig c;
  c.enabled = false;
  FailureProcess p(c, 16, sim::RandomStreams(1).Stream("t"));
  EXPECT_TRUE(p.Next().at.is_max());
  c.enabled = true;
  c.node_day_rate = 0;
  FailureProcess q(c, 16, sim::RandomStreams(1).Stream("t"));
  EXPECT_TRUE(q.Next().at.is_max());
}

TEST(FailureModelTest, ValidateRejectsWeibullShapesBelowTheMinimum) {
  FailureModelConfig c;
  c.distribution = FailureDistribution::kWeibull;
  c.weibull_shape = 0.02;  // Γ(51) ≈ 3e64: the scale is ~1e-57 s at the Llama 3 rate
  EXPECT_FALSE(c.Validate().ok());
  EXPECT_NE(c.Validate().message().find("0.1"), std::string::npos) << c.Validate().message();
  c.weibull_shape = kMinWeibullShape;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().message();
}

// With k = 0.02 the Weibull scale is far below 1 ns, so nearly every gap rounded to 0 ns: a node
// failed again at the same instant forever and run/whatif/sweep never ended. Each node's next
// failure must now come strictly later than its last, whatever the shape (sampler fed directly,
// past Validate), and drawing many arrivals must take bounded time.
TEST(FailureProcessTest, WeibullGapsAlwaysMoveEachNodesTimeForwardEvenForATinyShape) {
  for (double shape : {0.02, kMinWeibullShape}) {
    FailureModelConfig c;
    c.node_day_rate = kLlama3NodeDayRate;
    c.distribution = FailureDistribution::kWeibull;
    c.weibull_shape = shape;
    const int nodes = 16;
    FailureProcess p(c, nodes, sim::RandomStreams(3).Stream("t"));
    std::vector<sim::Time> last(nodes, sim::Time::Nanos(-1));
    const auto start = std::chrono::steady_clock::now();
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      FailureProcess::Arrival a = p.Next();
      // The heavy tail can push every node past ~292 years: Time::Max() is "never", for good.
      if (a.at.is_max()) break;
      ASSERT_GT(a.at, last[a.node]) << "shape " << shape << ", arrival " << i;
      last[a.node] = a.at;
    }
    // 200,000 draws from a heap of 16 take milliseconds; 10 s means something loops.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  }
}

}  // namespace
}  // namespace trainsim::checkpoint

namespace trainsim::checkpoint {
namespace {

// Each Llama 3 root cause is detected the way it shows itself (docs/faults.md).
TEST(FailureModelTest, DefaultCausesCarryTheirDetectionMechanism) {
  int silent = 0;
  for (const FailureCause& c : DefaultFailureCauses()) {
    if (c.name == "Silent data corruption") {
      EXPECT_EQ(c.detection, DetectionMechanism::kLossCheck);
      EXPECT_TRUE(c.silent);
    } else if (c.name == "NCCL watchdog timeouts") {
      EXPECT_EQ(c.detection, DetectionMechanism::kCollectiveTimeout);
    } else if (c.category == "network") {
      EXPECT_EQ(c.detection, DetectionMechanism::kNcclError) << c.name;
    } else if (c.category == "host") {
      EXPECT_EQ(c.detection, DetectionMechanism::kHeartbeat) << c.name;
    } else {
      EXPECT_EQ(c.detection, DetectionMechanism::kProcessExit) << c.name;
    }
    silent += c.silent ? 1 : 0;
  }
  EXPECT_EQ(silent, 1);
}

}  // namespace
}  // namespace trainsim::checkpoint
