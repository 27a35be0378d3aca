// Configs and step-time callbacks shared by the run simulation tests. The callbacks are simple
// enough that every expected number in the tests can be worked out by hand.
#ifndef TRAINSIM_TESTS_RUN_RUN_TEST_UTIL_H_
#define TRAINSIM_TESTS_RUN_RUN_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>
#include <string>

#include "run/run_simulation.h"

namespace trainsim::sim {
// Lets GoogleTest print Time in failure messages.
inline void PrintTo(const Time& t, std::ostream* os) { *os << FormatDuration(t); }
}  // namespace trainsim::sim

namespace trainsim::run::testing {

using checkpoint::CheckpointInterval;
using checkpoint::CheckpointPolicy;

// The default demo's shape: a 175B model on 16 nodes × 8 H100 (TP 8, PP 8, DP 2), hourly
// synchronous checkpoints, two spares, the stochastic model off.
inline RunConfig DemoLikeConfig() {
  RunConfig c;
  c.total_steps = 5000;
  c.nodes = 16;
  c.gpus_per_node = 8;
  c.tp = 8;
  c.pp = 8;
  c.dp = 2;
  c.spare_nodes = 2;
  c.checkpoint.policy = CheckpointPolicy::kSync;
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kTrainingTime;
  c.checkpoint.interval.every = sim::Time::Hours(1);
  c.checkpoint.spec.parameters = 175'000'000'000;
  c.checkpoint.hardware.storage_write_GBps = 100;
  c.checkpoint.hardware.storage_read_GBps = 400;
  c.failures.enabled = false;
  return c;
}

// Healthy step: 20 s = 14 useful + 2 exposed comm + 4 bubble; every slowed GPU stretches the
// step by its factor (as a whole), a missing DP replica doubles the bubble's share of the work.
inline StepTimeFn SimpleStep(sim::Time useful = sim::Time::Seconds(14),
                             sim::Time comm = sim::Time::Seconds(2),
                             sim::Time bubble = sim::Time::Seconds(4)) {
  return [=](const RunState& s) -> Result<StepTiming> {
    double f = 1.0;
    for (const auto& [gpu, x] : s.gpu_slowdown) f = std::max(f, x);
    StepTiming t{useful, comm, bubble};
    const sim::Time total = t.total();
    t.bubble += sim::Time::FromSeconds(total.seconds() * (f - 1.0));
    return t;
  };
}

// DemoLikeConfig with rare stochastic node failures (~0.6 in the run's ~1.2 days on 16 nodes)
// and elastic recovery: only the histories in which a node fails shrink below DP 2.
inline RunConfig ElasticRareFailuresConfig() {
  RunConfig c = DemoLikeConfig();
  c.failures.enabled = true;
  c.failures.node_day_rate = 0.03;
  c.recovery.policy = checkpoint::RecoveryPolicy::kElastic;
  c.recovery.min_dp = 1;
  return c;
}

// SimpleStep, except that a job shrunk below two replicas has no step time (an error), so that
// only some histories of ElasticRareFailuresConfig fail.
inline StepTimeFn FailsOnceShrunk() {
  return [healthy = SimpleStep()](const RunState& s) -> Result<StepTiming> {
    if (s.live_dp_replicas < 2) return Status::Internal("no step time for a shrunk job");
    return healthy(s);
  };
}

// The trial K an error message "trial K: ..." names; -1 if it names none.
inline int FailingTrial(const std::string& message) {
  if (message.rfind("trial ", 0) != 0) return -1;
  return std::atoi(message.c_str() + 6);
}

inline ScheduledFault Fault(ScheduledFault::Kind kind, int id, sim::Time at,
                            sim::Time duration = sim::Time(), double factor = 1.0) {
  ScheduledFault f;
  f.kind = kind;
  f.id = id;
  f.at = at;
  f.duration = duration;
  f.factor = factor;
  return f;
}

// The report's phases tile [0, wall_time] in order, none empty, and the phases of each kind add
// up to the breakdown (training = useful + exposed comm + bubble + slowdown + checkpoint stall +
// lost + unfinished step).
inline ::testing::AssertionResult PhasesMatchBreakdown(const RunReport& r) {
  sim::Time at, training, detection, restart, waiting;
  for (size_t i = 0; i < r.phases.size(); ++i) {
    const RunPhase& p = r.phases[i];
    if (p.start != at || p.end <= p.start) {
      return ::testing::AssertionFailure()
             << "phase " << i << " (" << RunPhaseName(p.kind) << ") is [" << p.start.nanos() << ", "
             << p.end.nanos() << ") ns, expected to start at " << at.nanos() << " ns";
    }
    at = p.end;
    const sim::Time d = p.end - p.start;
    switch (p.kind) {
      case RunPhaseKind::kTraining:
        training += d;
        break;
      case RunPhaseKind::kDetection:
        detection += d;
        break;
      case RunPhaseKind::kRestart:
        restart += d;
        break;
      case RunPhaseKind::kWaiting:
        waiting += d;
        break;
    }
  }
  const Breakdown& b = r.breakdown;
  if (at != r.wall_time) {
    return ::testing::AssertionFailure() << "phases end at " << at.nanos() << " ns, wall time is "
                                         << r.wall_time.nanos() << " ns";
  }
  if (training != b.useful + b.exposed_comm + b.bubble + b.slowdown + b.checkpoint_stall + b.lost +
                      b.unfinished_step ||
      detection != b.detection || restart != b.restart || waiting != b.waiting) {
    return ::testing::AssertionFailure() << "phase totals differ from the breakdown";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace trainsim::run::testing

#endif  // TRAINSIM_TESTS_RUN_RUN_TEST_UTIL_H_
