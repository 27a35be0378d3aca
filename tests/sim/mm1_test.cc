// End-to-end check of the engine and the random streams against queueing theory: an M/M/1
// queue (Poisson arrivals at rate lambda, one server with exponential service at rate mu).
// Closed forms (Kleinrock, Queueing Systems Vol. 1, sec. 3.2), with rho = lambda / mu:
//   mean time in system W = 1 / (mu - lambda), server utilisation = rho.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <vector>

#include "sim/engine.h"
#include "sim/random.h"

namespace trainsim::sim {
namespace {

struct Mm1Result {
  std::vector<double> sojourn_s;  // per customer, in arrival order
  double busy_s = 0;
  double end_s = 0;
};

// Simulates `customers` arrivals; times are drawn in seconds and rounded to nanoseconds.
Mm1Result SimulateMm1(uint64_t seed, double lambda, double mu, int customers) {
  Engine engine;
  RandomStreams streams(seed);
  Rng arrivals = streams.Stream("arrivals");
  Rng service = streams.Stream("service");
  Mm1Result r;
  std::deque<Time> queue;  // arrival times of customers waiting or in service
  Time busy_since;
  int arrived = 0;

  std::function<void()> start_service;
  auto depart = [&] {
    r.sojourn_s.push_back((engine.now() - queue.front()).seconds());
    queue.pop_front();
    if (!queue.empty())
      start_service();
    else
      r.busy_s += (engine.now() - busy_since).seconds();
  };
  start_service = [&] {
    engine.Schedule(Time::FromSeconds(service.Exponential(1.0 / mu)), depart);
  };
  std::function<void()> arrive = [&] {
    queue.push_back(engine.now());
    if (queue.size() == 1) {
      busy_since = engine.now();
      start_service();
    }
    if (++arrived < customers) {
      engine.Schedule(Time::FromSeconds(arrivals.Exponential(1.0 / lambda)), arrive);
    }
  };
  engine.Schedule(Time::FromSeconds(arrivals.Exponential(1.0 / lambda)), arrive);
  engine.Run();
  r.end_s = engine.now().seconds();
  return r;
}

TEST(Mm1Test, MeanTimeInSystemMatchesOneOverMuMinusLambda) {
  const double lambda = 0.5, mu = 1.0;  // W = 2 s, rho = 0.5
  const int kBatches = 100, kPerBatch = 4000;
  Mm1Result r = SimulateMm1(2026, lambda, mu, kBatches * kPerBatch);
  ASSERT_EQ(r.sojourn_s.size(), static_cast<size_t>(kBatches * kPerBatch));
  // Successive sojourn times are correlated, so the tolerance comes from batch means (each
  // batch spans ~8000 s, far longer than the queue's relaxation time of ~12 s at rho = 0.5):
  // the batch means are nearly independent and the CLT applies to them.
  std::vector<double> means;
  for (int b = 0; b < kBatches; ++b) {
    double sum = 0;
    for (int i = 0; i < kPerBatch; ++i) sum += r.sojourn_s[b * kPerBatch + i];
    means.push_back(sum / kPerBatch);
  }
  double grand = 0;
  for (double m : means) grand += m;
  grand /= kBatches;
  double ss = 0;
  for (double m : means) ss += (m - grand) * (m - grand);
  const double se = std::sqrt(ss / (kBatches - 1) / kBatches);
  EXPECT_NEAR(grand, 1.0 / (mu - lambda), 5 * se) << "standard error " << se;
  EXPECT_LT(se, 0.05);  // the check is meaningful: 5 se is under 12.5% of W
  // Utilisation: busy time over elapsed time tends to rho; the band is loose because it is a
  // ratio of correlated sums (a sanity check; W above is the sharp one).
  EXPECT_NEAR(r.busy_s / r.end_s, lambda / mu, 0.02);
}

TEST(Mm1Test, SameSeedReproducesEveryCustomerExactly) {
  Mm1Result a = SimulateMm1(7, 0.8, 1.0, 20000);
  Mm1Result b = SimulateMm1(7, 0.8, 1.0, 20000);
  EXPECT_EQ(a.sojourn_s, b.sojourn_s);  // bitwise
  Mm1Result c = SimulateMm1(8, 0.8, 1.0, 20000);
  EXPECT_NE(a.sojourn_s, c.sojourn_s);
}

}  // namespace
}  // namespace trainsim::sim
