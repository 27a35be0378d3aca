#include "sim/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace trainsim::sim {
namespace {

// Sample size for the distribution checks: large enough that 5-sigma bands are tight, small
// enough to run in milliseconds.
constexpr int kSamples = 200000;
// A fixed seed makes each check deterministic; the 5-sigma bands (CLT) would also hold for
// almost every other seed (two-sided 5-sigma tail: 5.7e-7).
constexpr double kSigmas = 5.0;

TEST(RandomTest, SplitMix64MatchesReferenceVector) {
  // Outputs of Vigna's splitmix64.c from state 0.
  uint64_t state = 0;
  EXPECT_EQ(SplitMix64(state), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(SplitMix64(state), 0x6e789e6aa1b965f4ULL);
}

TEST(RandomTest, Fnv1a64MatchesReferenceVectors) {
  // Test vectors from the FNV specification (offset basis for "", then "a" and "foobar").
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(RandomTest, Xoshiro256StarStarMatchesHandComputedOutputs) {
  // State {1, 2, 3, 4}: out0 = rotl(2*5, 7)*9 = 11520; the update makes s1 = 0, so out1 = 0;
  // then s1 = 262149 and out2 = rotl(262149*5, 7)*9 = 1509978240 (worked by hand from the
  // reference algorithm).
  Rng r = Rng::FromState(1, 2, 3, 4);
  EXPECT_EQ(r.NextU64(), 11520u);
  EXPECT_EQ(r.NextU64(), 0u);
  EXPECT_EQ(r.NextU64(), 1509978240u);
}

TEST(RandomTest, SameSeedAndPurposeGiveIdenticalSequences) {
  Rng a = RandomStreams(7).Stream("failures");
  Rng b = RandomStreams(7).Stream("failures");
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.NextU64(), b.NextU64()) << i;
  Rng c = RandomStreams(7).Stream("failures");
  Rng d = RandomStreams(7).Stream("failures");
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(c.Exponential(3.0), d.Exponential(3.0));
    ASSERT_EQ(c.Weibull(0.7, 2.0), d.Weibull(0.7, 2.0));
    ASSERT_EQ(c.UniformInt(1000), d.UniformInt(1000));
  }
}

TEST(RandomTest, StreamIsSeedXorPurposeHash) {
  Rng a = RandomStreams(12345).Stream("stragglers");
  Rng b(12345 ^ Fnv1a64("stragglers"));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.NextU64(), b.NextU64());
}

TEST(RandomTest, DifferentPurposesAndSeedsGiveDifferentSequences) {
  RandomStreams streams(7);
  std::vector<Rng> rngs = {streams.Stream("failures"), streams.Stream("stragglers"),
                           streams.Stream("trial/1/failures"), streams.Stream("trial/2/failures"),
                           RandomStreams(8).Stream("failures")};
  std::vector<std::vector<uint64_t>> seqs;
  for (Rng& r : rngs) {
    std::vector<uint64_t> s;
    for (int i = 0; i < 16; ++i) s.push_back(r.NextU64());
    seqs.push_back(s);
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    for (size_t j = i + 1; j < seqs.size(); ++j) {
      // Not merely different sequences: no position agrees (chance 16 * 2^-64).
      for (int k = 0; k < 16; ++k) EXPECT_NE(seqs[i][k], seqs[j][k]) << i << " " << j;
    }
  }
}

TEST(RandomTest, DrawsFromOneStreamDoNotShiftAnother) {
  RandomStreams streams(99);
  Rng alone = streams.Stream("stragglers");
  std::vector<uint64_t> expected;
  for (int i = 0; i < 100; ++i) expected.push_back(alone.NextU64());

  Rng failures = streams.Stream("failures");
  Rng stragglers = streams.Stream("stragglers");
  for (int i = 0; i < 100; ++i) {
    for (int j = 0; j < i % 5; ++j) failures.Exponential(1.0);  // extra draws elsewhere
    EXPECT_EQ(stragglers.NextU64(), expected[i]);
  }
}

TEST(RandomTest, UniformIsInUnitIntervalWithMeanAndVarianceOfU01) {
  Rng r(1);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < kSamples; ++i) {
    const double u = r.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    // 53 bits: u * 2^53 is an integer.
    ASSERT_EQ(std::floor(u * 0x1.0p53), u * 0x1.0p53);
    sum += u;
    sum_sq += u * u;
  }
  const double mean = sum / kSamples;
  // U(0,1): mean 1/2, variance 1/12, so the sample mean has sd sqrt(1/12 / n).
  EXPECT_NEAR(mean, 0.5, kSigmas * std::sqrt(1.0 / 12.0 / kSamples));
  // E[U^2] = 1/3 with Var(U^2) = 1/5 - 1/9 = 4/45.
  EXPECT_NEAR(sum_sq / kSamples, 1.0 / 3.0, kSigmas * std::sqrt(4.0 / 45.0 / kSamples));
}

TEST(RandomTest, UniformIntStaysInRangeAndIsFlat) {
  Rng r(2);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(r.UniformInt(1), 0u);
  const uint64_t big = (uint64_t{1} << 63) + 1;  // the worst case for rejection (~50%)
  for (int i = 0; i < 1000; ++i) ASSERT_LT(r.UniformInt(big), big);
  for (int i = 0; i < 1000; ++i) r.UniformInt(~uint64_t{0});  // n = 2^64 - 1 is valid

  constexpr uint64_t kN = 10;
  std::vector<int> counts(kN, 0);
  for (int i = 0; i < kSamples; ++i) {
    const uint64_t v = r.UniformInt(kN);
    ASSERT_LT(v, kN);
    ++counts[v];
  }
  // Each count is Binomial(n, 1/10): mean n/10, sd sqrt(n * 0.1 * 0.9).
  const double sd = std::sqrt(kSamples * 0.1 * 0.9);
  for (uint64_t v = 0; v < kN; ++v) EXPECT_NEAR(counts[v], kSamples / 10.0, kSigmas * sd) << v;
}

TEST(RandomTest, ExponentialMeanMatchesWithinCltBound) {
  Rng r(3);
  const double mean = 3.5;
  double sum = 0;
  for (int i = 0; i < kSamples; ++i) {
    const double x = r.Exponential(mean);
    ASSERT_GE(x, 0.0);
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
  }
  // Exponential's sd equals its mean, so the sample mean has sd mean / sqrt(n).
  EXPECT_NEAR(sum / kSamples, mean, kSigmas * mean / std::sqrt(kSamples));
}

TEST(RandomTest, ExponentialMedianIsMeanTimesLn2) {
  // P(X <= mean ln 2) = 1/2; the count below is Binomial(n, 1/2).
  Rng r(4);
  const double mean = 10.0;
  int below = 0;
  for (int i = 0; i < kSamples; ++i) below += r.Exponential(mean) <= mean * std::log(2.0);
  EXPECT_NEAR(below, kSamples / 2.0, kSigmas * std::sqrt(kSamples * 0.25));
}

TEST(RandomTest, WeibullMeanIsScaleTimesGammaOnePlusInverseShape) {
  for (double shape : {0.7, 1.0, 1.5, 3.0}) {
    const double scale = 2.0;
    Rng r(5);
    double sum = 0;
    int below_scale = 0;
    for (int i = 0; i < kSamples; ++i) {
      const double x = r.Weibull(shape, scale);
      ASSERT_GE(x, 0.0);
      sum += x;
      below_scale += x <= scale;
    }
    const double g1 = std::tgamma(1.0 + 1.0 / shape);
    const double g2 = std::tgamma(1.0 + 2.0 / shape);
    const double mean = scale * g1;
    const double sd = scale * std::sqrt(g2 - g1 * g1);
    EXPECT_NEAR(sum / kSamples, mean, kSigmas * sd / std::sqrt(kSamples)) << "shape " << shape;
    // F(scale) = 1 - e^-1 for every shape.
    const double p = 1.0 - std::exp(-1.0);
    EXPECT_NEAR(below_scale, kSamples * p, kSigmas * std::sqrt(kSamples * p * (1 - p)))
        << "shape " << shape;
  }
}

TEST(RandomTest, WeibullWithShapeOneIsExponential) {
  // Same uniform draws through both inversions: Weibull(1, m) and Exponential(m) coincide.
  Rng a(6), b(6);
  for (int i = 0; i < 1000; ++i) EXPECT_DOUBLE_EQ(a.Weibull(1.0, 4.0), b.Exponential(4.0));
}

}  // namespace
}  // namespace trainsim::sim
