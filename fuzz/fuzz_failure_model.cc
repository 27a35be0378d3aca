// Fuzzes the failure-model sampler (checkpoint::FailureProcess): the input picks the rate,
// distribution, Weibull shape, cause weights, node count and seed. Properties, for a config that
// Validate() accepts: drawing 2,000 arrivals ends (it once looped forever on a tiny shape);
// arrivals come in time order; each node's next failure is strictly after its last (no 0 ns
// gaps); nodes and causes are in range; once the process returns Time::Max() it stays there.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/failure_model.h"
#include "fuzz/fuzz_util.h"
#include "sim/random.h"

namespace {

double DoubleAt(const uint8_t* data, size_t size, size_t* pos) {
  double v = 0;
  if (*pos + sizeof v <= size) std::memcpy(&v, data + *pos, sizeof v);
  *pos += sizeof v;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using trainsim::checkpoint::FailureDistribution;
  using trainsim::checkpoint::FailureModelConfig;
  using trainsim::checkpoint::FailureProcess;
  size_t pos = 0;
  auto byte = [&]() -> uint8_t { return pos < size ? data[pos++] : 0; };
  FailureModelConfig c;
  const uint8_t flags = byte();
  c.enabled = (flags & 1) == 0;
  c.distribution = (flags & 2) ? FailureDistribution::kWeibull : FailureDistribution::kExponential;
  const int nodes = 1 + byte() % 64;
  const uint64_t seed = byte();
  c.node_day_rate = DoubleAt(data, size, &pos);
  c.weibull_shape = DoubleAt(data, size, &pos);
  for (int n = byte() % 4; n > 0; --n) {
    trainsim::checkpoint::FailureCause cause;
    cause.name = "c" + std::to_string(n);
    cause.weight = DoubleAt(data, size, &pos);
    cause.needs_replacement = (n & 1) != 0;
    c.causes.push_back(cause);
  }
  const std::string what = "rate " + std::to_string(c.node_day_rate) + " shape " +
                           std::to_string(c.weibull_shape) + " nodes " + std::to_string(nodes);
  if (!c.Validate().ok()) return 0;
  // Rates beyond the validated scenario range (<= 1000 per node-day) are the sampler's own
  // concern too: it must still end and stay ordered.
  FailureProcess p(c, nodes, trainsim::sim::RandomStreams(seed).Stream("fuzz"));
  std::vector<trainsim::sim::Time> last(nodes, trainsim::sim::Time::Nanos(-1));
  trainsim::sim::Time prev = trainsim::sim::Time::Nanos(-1);
  bool ended = false;
  for (int i = 0; i < 2000; ++i) {
    FailureProcess::Arrival a = p.Next();
    if (a.at.is_max()) {
      ended = true;
      continue;
    }
    FUZZ_CHECK(!ended, "an arrival after the end: " + what);
    FUZZ_CHECK(a.at >= prev, "out of order: " + what);
    FUZZ_CHECK(a.node >= 0 && a.node < nodes, "node out of range: " + what);
    FUZZ_CHECK(a.cause >= 0 && a.cause < static_cast<int>(p.causes().size()),
               "cause out of range: " + what);
    if (c.distribution == FailureDistribution::kWeibull) {
      FUZZ_CHECK(a.at > last[a.node], "a 0 ns gap: " + what);
    }
    last[a.node] = a.at;
    prev = a.at;
  }
  return 0;
}
