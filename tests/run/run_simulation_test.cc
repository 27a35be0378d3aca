#include "run/run_simulation.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/run/run_test_util.h"

namespace trainsim::run {
namespace {

using checkpoint::CheckpointInterval;
using checkpoint::CheckpointPolicy;
using checkpoint::DalyIntervalSeconds;
using checkpoint::DetectionMechanism;
using checkpoint::kLlama3NodeDayRate;
using checkpoint::RecoveryPolicy;

using sim::Time;
using testing::DemoLikeConfig;
using testing::Fault;
using testing::SimpleStep;

void ExpectAddsUp(const RunReport& r) {
  EXPECT_EQ(r.breakdown.Total(), r.wall_time);
  EXPECT_EQ(r.steps_executed - r.steps_rolled_back, r.total_steps);
}

TEST(RunSimulationTest, FaultFreeWallTimeIsStepsTimesStepTimePlusStalls) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 1000;
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kSteps;
  c.checkpoint.interval.steps = 100;
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Checkpoints after steps 100, 200, ..., 900 (none is due at the very end): 9 stalls of
  // 2.45e12 B / 100 GB/s = 24.5 s each.
  const Time stall = Time::Millis(24500);
  EXPECT_EQ(r->checkpoints, 9);
  EXPECT_EQ(r->wall_time, Time::Seconds(20) * 1000 + stall * 9);
  EXPECT_EQ(r->breakdown.useful, Time::Seconds(14) * 1000);
  EXPECT_EQ(r->breakdown.exposed_comm, Time::Seconds(2) * 1000);
  EXPECT_EQ(r->breakdown.bubble, Time::Seconds(4) * 1000);
  EXPECT_EQ(r->breakdown.checkpoint_stall, stall * 9);
  EXPECT_EQ(r->breakdown.lost, Time());
  EXPECT_DOUBLE_EQ(r->useful_compute_fraction,
                   r->breakdown.useful.seconds() / r->wall_time.seconds());
  ExpectAddsUp(*r);
}

TEST(RunSimulationTest, TrainingTimeIntervalCheckpointsAfterEachHourOfTraining) {
  RunConfig c = DemoLikeConfig();  // 20 s steps: an hour is exactly 180 steps
  c.total_steps = 1000;
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Checkpoints after steps 180, 360, 540, 720, 900.
  EXPECT_EQ(r->checkpoints, 5);
  EXPECT_EQ(r->wall_time, Time::Seconds(20000) + Time::Millis(24500) * 5);
}

TEST(RunSimulationTest, AsyncStallsForTheSnapshotAndSlowsStepsDuringTheWrite) {
  RunConfig c;
  c.total_steps = 1000;
  c.nodes = 1;
  c.gpus_per_node = 1;
  c.nics_per_node = 1;
  c.failures.enabled = false;
  c.checkpoint.policy = CheckpointPolicy::kAsync;
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kSteps;
  c.checkpoint.interval.steps = 100;
  c.checkpoint.spec.parameters = 60'000'000'000;
  c.checkpoint.spec.bytes_per_param = 1;              // 60 GB
  c.checkpoint.hardware.storage_write_GBps = 1;       // background write: 60 s
  c.checkpoint.hardware.host_copy_GBps_per_gpu = 30;  // snapshot: 2 s
  // 10 s steps, 12 s while a checkpoint write shares the network.
  StepTimeCache cache([](const RunState& s) -> Result<StepTiming> {
    return StepTiming{Time::Seconds(10), Time(),
                      s.checkpoint_traffic_share > 0 ? Time::Seconds(2) : Time()};
  });
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // 9 checkpoints; each stalls 2 s, then its 60 s write overlaps 5 steps of 12 s (the 5th step
  // started at 48 s runs to its end at 60 s), each 2 s longer.
  EXPECT_EQ(r->checkpoints, 9);
  EXPECT_EQ(r->breakdown.checkpoint_stall, Time::Seconds(18));
  EXPECT_EQ(r->wall_time, Time::Seconds(10000 + 9 * 2 + 9 * 5 * 2));
  ExpectAddsUp(*r);
}

// The requirement's example: `gpu 37 fails at 16h` on the default scenario with the stochastic
// model off. Extra wall time = lost work since the last checkpoint completed before 16h + detection
// + restart + wait, to the nanosecond, and the report names the checkpoint.
TEST(RunSimulationTest, Gpu37At16hCostsLostWorkPlusDetectionPlusRestart) {
  RunConfig c = DemoLikeConfig();
  StepTimeCache cache(SimpleStep());
  Result<RunReport> base = SimulateRun(c, cache);
  ASSERT_TRUE(base.ok()) << base.status().message();
  c.faults.push_back(Fault(ScheduledFault::Kind::kGpu, 37, Time::Hours(16)));
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectAddsUp(*r);

  // Checkpoint k completes at k · (3600 s + 24.5 s); the 15th, at 54,367.5 s (step 2,700), is
  // the last before 16 h = 57,600 s.
  const Time delta = Time::Millis(24500);
  const Time ckpt15 = (Time::Hours(1) + delta) * 15;
  const Time lost = Time::Hours(16) - ckpt15;  // 3,232.5 s
  const Time detection = Time::Seconds(5);     // PROCESS_EXIT: the GPU's Xid crashes the process
  // requeue 2 min + process start 3 min + NCCL init 10 s + 2 ms × 128 + load 2.45 TB / 400 GB/s.
  const Time restart =
      Time::Minutes(5) + Time::Seconds(10) + Time::Millis(2) * 128 + Time::Micros(6125000);
  EXPECT_EQ(r->wall_time - base->wall_time, lost + detection + restart);
  EXPECT_EQ(r->breakdown.lost, lost);
  EXPECT_EQ(r->breakdown.detection, detection);
  EXPECT_EQ(r->breakdown.restart, restart);
  EXPECT_EQ(r->breakdown.waiting, Time());
  ASSERT_EQ(r->failure_records.size(), 1u);
  const FailureRecord& f = r->failure_records[0];
  EXPECT_EQ(f.what, "gpu 37 (node 4)");
  EXPECT_EQ(f.restored_checkpoint, 15);
  EXPECT_EQ(f.restored_step, 2700);
  EXPECT_EQ(f.restored_checkpoint_written_at, ckpt15);
  EXPECT_EQ(f.detected_at, Time::Hours(16) + detection);
  EXPECT_EQ(f.resumed_at, Time::Hours(16) + detection + restart);
  EXPECT_EQ(r->failures, 1);
  EXPECT_EQ(r->failures_by_cause.at("SCHEDULED_GPU"), 1);
}

// The same failure as typed data: the events carry their kind and numbers, and the phases
// (training, detection, restart, training) tile the run and match the breakdown.
TEST(RunSimulationTest, Gpu37At16hAsTypedEventsAndPhases) {
  RunConfig c = DemoLikeConfig();
  c.faults.push_back(Fault(ScheduledFault::Kind::kGpu, 37, Time::Hours(16)));
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(testing::PhasesMatchBreakdown(*r));
  const Time detected = Time::Hours(16) + Time::Seconds(5);  // PROCESS_EXIT
  const Time resumed = r->failure_records.at(0).resumed_at;
  EXPECT_TRUE(r->failure_records.at(0).scheduled);
  ASSERT_EQ(r->phases.size(), 4u);
  EXPECT_EQ(r->phases[0].kind, RunPhaseKind::kTraining);
  EXPECT_EQ(r->phases[0].end, Time::Hours(16));
  EXPECT_EQ(r->phases[1].kind, RunPhaseKind::kDetection);
  EXPECT_EQ(r->phases[1].end, detected);
  EXPECT_EQ(r->phases[2].kind, RunPhaseKind::kRestart);
  EXPECT_EQ(r->phases[2].end, resumed);
  EXPECT_EQ(r->phases[3].kind, RunPhaseKind::kTraining);
  EXPECT_EQ(r->phases[3].end, r->wall_time);

  std::vector<RunEventKind> recovery;
  int written = 0;
  for (const RunEvent& e : r->events) {
    if (e.kind == RunEventKind::kCheckpointWritten) {
      ++written;
      EXPECT_EQ(e.duration, Time::Millis(24500));  // SYNC: the write is the stall
      continue;
    }
    recovery.push_back(e.kind);
    if (e.kind == RunEventKind::kFailure) {
      EXPECT_EQ(e.at, Time::Hours(16));
      EXPECT_EQ(e.failure, 0u);
    } else if (e.kind == RunEventKind::kRestart) {
      EXPECT_EQ(e.at, detected);
      EXPECT_EQ(e.checkpoint, 15);
      EXPECT_EQ(e.step, 2700);
      EXPECT_EQ(e.duration, resumed - detected);
      EXPECT_FALSE(e.from_peer);
    } else if (e.kind == RunEventKind::kResumed) {
      EXPECT_EQ(e.at, resumed);
      EXPECT_EQ(e.step, 2700);
    } else if (e.kind == RunEventKind::kRepaired) {
      EXPECT_EQ(e.at, Time::Hours(16) + c.recovery.scheduled_repair_time);
      EXPECT_EQ(e.node, 4);  // gpu 37's node returns to the spare pool
    }
  }
  EXPECT_EQ(written, r->checkpoints);
  EXPECT_EQ(recovery, (std::vector<RunEventKind>{RunEventKind::kFailure, RunEventKind::kDetected,
                                                 RunEventKind::kRestart, RunEventKind::kResumed,
                                                 RunEventKind::kRepaired}));
}

TEST(RunSimulationTest, WithoutSparesTheRunWaitsForTheRepair) {
  for (RecoveryPolicy policy : {RecoveryPolicy::kRestartOnSpare, RecoveryPolicy::kWaitForRepair}) {
    RunConfig c = DemoLikeConfig();
    c.recovery.policy = policy;
    if (policy == RecoveryPolicy::kRestartOnSpare) c.spare_nodes = 0;  // WAIT ignores spares
    c.recovery.scheduled_repair_time = Time::Hours(6);
    StepTimeCache cache(SimpleStep());
    Result<RunReport> base = SimulateRun(c, cache);
    c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 3, Time::Hours(16)));
    Result<RunReport> r = SimulateRun(c, cache);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ExpectAddsUp(*r);
    // Detected by HEARTBEAT after 15 s, the node is back 6 h after it failed.
    EXPECT_EQ(r->breakdown.waiting, Time::Hours(6) - Time::Seconds(15));
    EXPECT_EQ(r->wall_time - base->wall_time,
              r->breakdown.lost + Time::Hours(6) + r->breakdown.restart);
  }
}

TEST(RunSimulationTest, SoftwareHangRestartsInPlaceWithoutASpare) {
  RunConfig c = DemoLikeConfig();
  c.spare_nodes = 0;
  StepTimeCache cache(SimpleStep());
  c.faults.push_back(Fault(ScheduledFault::Kind::kSoftwareHang, 0, Time::Hours(16)));
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->breakdown.waiting, Time());
  EXPECT_EQ(r->breakdown.detection, Time::Seconds(5));  // PROCESS_EXIT
  EXPECT_FALSE(r->failure_records[0].needs_replacement);
}

TEST(RunSimulationTest, HangOfOneRankRestartsInPlace) {
  RunConfig c = DemoLikeConfig();
  c.spare_nodes = 0;
  c.faults.push_back(Fault(ScheduledFault::Kind::kHang, 9, Time::Hours(3)));
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectAddsUp(*r);
  EXPECT_EQ(r->breakdown.waiting, Time());
  EXPECT_EQ(r->breakdown.detection, Time::Minutes(10));
  EXPECT_EQ(r->failure_records.at(0).what, "gpu 9 (node 1) hang");
}

TEST(RunSimulationTest, WallTimeGoalTrainsAsManyStepsAsFit) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 0;  // no step cap
  c.wall_time_limit = Time::Hours(10);
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Checkpoint k ends at k · 3,624.5 s; the 9th at 32,620.5 s. The remaining 3,379.5 s hold 168
  // steps of 20 s and 19.5 s of a step that does not finish (unfinished, not lost work).
  EXPECT_EQ(r->wall_time, Time::Hours(10));
  EXPECT_EQ(r->total_steps, 9 * 180 + 168);
  EXPECT_EQ(r->breakdown.lost, Time());
  EXPECT_EQ(r->breakdown.unfinished_step, Time::Millis(19500));
  EXPECT_EQ(r->checkpoints, 9);
  EXPECT_EQ(r->breakdown.Total(), r->wall_time);
  // Billed: 16 job nodes + 2 spares, 8 GPUs each, for 10 h.
  EXPECT_DOUBLE_EQ(r->gpu_hours, 18 * 8 * 10.0);
  EXPECT_DOUBLE_EQ(r->cost_usd, 18 * 8 * 10.0 * 2.5);
}

TEST(RunSimulationTest, ElasticBelowMinDpWaitsForTheRepair) {
  RunConfig c = DemoLikeConfig();  // DP 2
  c.spare_nodes = 0;
  c.recovery.policy = RecoveryPolicy::kElastic;
  c.recovery.min_dp = 2;
  c.recovery.scheduled_repair_time = Time::Hours(2);
  c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 3, Time::Hours(16)));
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectAddsUp(*r);
  EXPECT_EQ(r->breakdown.waiting, Time::Hours(2) - Time::Seconds(15));  // HEARTBEAT
}

TEST(RunSimulationTest, StragglerSlowsEveryStepItTakesPartIn) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 3000;
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kNever;
  // GPU 5 is 1.3× slower from 1 h for 4 h; healthy steps take 10 s, slowed ones 13 s.
  c.faults.push_back(
      Fault(ScheduledFault::Kind::kStraggler, 5, Time::Hours(1), Time::Hours(4), 1.3));
  StepTimeCache cache(SimpleStep(Time::Seconds(10), Time(), Time()));
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Steps 361.. start slowed at 3,600 s; the straggler ends at 18,000 s, during the 1,108th
  // slowed step (14,400 / 13 = 1,107.7), which finishes at 13 s. 1,108 steps × 3 s extra.
  EXPECT_EQ(r->wall_time, Time::Seconds(30000 + 1108 * 3));
  // The extra time is slowdown, its own category; the bubble stays the healthy step's (none).
  EXPECT_EQ(r->breakdown.slowdown, Time::Seconds(1108 * 3));
  EXPECT_EQ(r->breakdown.bubble, Time());
  ExpectAddsUp(*r);
}

// Two nodes of one DP replica each, 1,000 steps, a 2 GB checkpoint every 100 steps (2 s to
// write and to load at 1 GB/s), ELASTIC recovery, repairs after 1 h, a uniform 600 s detection
// (the legacy recovery.detection_delay) to keep the arithmetic round.
RunConfig TwoNodeElasticConfig() {
  RunConfig c;
  c.total_steps = 1000;
  c.nodes = 2;
  c.gpus_per_node = 8;
  c.tp = 8;
  c.pp = 1;
  c.dp = 2;  // one replica per node
  c.failures.enabled = false;
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kSteps;
  c.checkpoint.interval.steps = 100;
  c.checkpoint.spec.parameters = 2'000'000'000;
  c.checkpoint.spec.bytes_per_param = 1;
  c.checkpoint.hardware.storage_write_GBps = 1;
  c.checkpoint.hardware.storage_read_GBps = 1;
  c.recovery.policy = RecoveryPolicy::kElastic;
  c.recovery.scheduled_repair_time = Time::Hours(1);
  c.recovery.uniform_detection = true;
  c.recovery.detection = DetectionMechanism::kCollectiveTimeout;
  c.recovery.detection_delay = Time::Seconds(600);
  return c;
}

TEST(RunSimulationTest, ElasticContinuesWithOneReplicaFewerUntilTheNodeReturns) {
  RunConfig c = TwoNodeElasticConfig();
  c.recovery.scheduler_requeue = Time::Seconds(180);
  c.recovery.process_start = Time::Seconds(120);
  c.recovery.comm_init_base = Time();
  c.recovery.comm_init_per_gpu = Time();
  c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 1, Time::Seconds(1502)));
  // DP 2: 10 s steps; DP 1: the surviving replica does both halves, 20 s.
  StepTimeCache cache([](const RunState& s) -> Result<StepTiming> {
    return StepTiming{Time::Seconds(10), Time(),
                      s.live_dp_replicas == 2 ? Time() : Time::Seconds(10)};
  });
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectAddsUp(*r);
  // Checkpoint 1 done at 1,002 s; the failure at 1,502 s loses 50 steps (500 s); detected at
  // 2,102 s; restart 180 + 120 + 2 s load → 2,404 s with DP 1. Checkpoints at steps 200 and 300
  // complete at 4,406 s and 6,408 s; the node is back at 5,102 s, so the replica rejoins at
  // 6,408 s: restart without requeue, 120 + 2 s → 6,530 s. Then 700 steps of 10 s and 6
  // checkpoints (steps 400..900): end at 6,530 + 7,000 + 12 = 13,542 s.
  EXPECT_EQ(r->wall_time, Time::Seconds(13542));
  EXPECT_EQ(r->breakdown.lost, Time::Seconds(500));
  EXPECT_EQ(r->breakdown.detection, Time::Seconds(600));
  EXPECT_EQ(r->breakdown.restart, Time::Seconds(302 + 122));
  EXPECT_EQ(r->breakdown.waiting, Time());
  // A kept step counts at the healthy (DP 2) split, 10 s of useful compute: the 200 DP-1 steps'
  // other 10 s each are slowdown, as a straggler's would be, not bubble or useful compute.
  EXPECT_EQ(r->breakdown.bubble, Time());
  EXPECT_EQ(r->breakdown.slowdown, Time::Seconds(200 * 10));
  EXPECT_EQ(r->breakdown.useful, Time::Seconds(1000 * 10));
  EXPECT_EQ(r->checkpoints, 9);
}

// ELASTIC with both replicas hit, one after the other: node 1 fails at 1,502 s (the job goes on
// with node 0's replica), then node 0 at 3,000 s, detected at 3,600 s, with no replica left to
// go on with. Node 1 is repaired at 5,102 s: its replica is whole, min_dp 1 is met, and the job
// restarts then. It waited for node 0's repair (6,600 s) and restarted with one replica, node 1's
// rejoining later at a second restart.
TEST(RunSimulationTest, ElasticWaitingJobRestartsOnceARepairedReplicaMeetsMinDp) {
  RunConfig c = TwoNodeElasticConfig();
  c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 1, Time::Seconds(1502)));
  c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 0, Time::Seconds(3000)));
  c.record_events = true;
  StepTimeCache cache([](const RunState& s) -> Result<StepTiming> {
    return StepTiming{Time::Seconds(10), Time(),
                      s.live_dp_replicas == 2 ? Time() : Time::Seconds(10)};
  });
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectAddsUp(*r);
  EXPECT_EQ(r->breakdown.waiting, Time::Seconds(5102 - 3600));
  bool restarted_at_repair = false;
  for (const RunEvent& e : r->events) {
    if (e.kind == RunEventKind::kRestart && e.at == Time::Seconds(5102)) restarted_at_repair = true;
  }
  EXPECT_TRUE(restarted_at_repair);
}

RunConfig InMemoryConfig() {
  RunConfig c = DemoLikeConfig();
  c.nodes = 4;
  c.tp = 8;
  c.pp = 4;
  c.dp = 1;
  c.spare_nodes = 4;
  c.checkpoint.policy = CheckpointPolicy::kInMemory;
  c.checkpoint.persistent_every = 4;
  c.checkpoint.spec.parameters = 10'000'000'000;
  return c;
}

TEST(RunSimulationTest, InMemoryRestoresFromPeerMemoryWhenTheCopySurvives) {
  RunConfig c = InMemoryConfig();
  c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 2, Time::Hours(10) + Time::Minutes(30)));
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectAddsUp(*r);
  const FailureRecord& f = r->failure_records.at(0);
  EXPECT_TRUE(f.restored_from_peer_memory);
  EXPECT_EQ(f.restored_checkpoint, 10);  // one per hour of training, the 10th before 10h30
}

TEST(RunSimulationTest, InMemoryFallsBackToStorageWhenANodeAndItsPeerFail) {
  RunConfig c = InMemoryConfig();
  // Node 2's copy lives on node 3: losing both leaves only the persistent checkpoints, taken
  // every 4th time (#4, #8, ...).
  c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 2, Time::Hours(10) + Time::Minutes(30)));
  c.faults.push_back(Fault(ScheduledFault::Kind::kNode, 3, Time::Hours(10) + Time::Minutes(31)));
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectAddsUp(*r);
  ASSERT_EQ(r->failure_records.size(), 2u);
  EXPECT_FALSE(r->failure_records[1].restored_from_peer_memory);
  EXPECT_EQ(r->failure_records[1].restored_checkpoint, 8);
}

TEST(RunSimulationTest, SameSeedSameReportDifferentSeedDifferentHistory) {
  RunConfig c = DemoLikeConfig();
  c.failures.enabled = true;
  c.failures.node_day_rate = 0.05;
  StepTimeCache cache(SimpleStep());
  Result<RunReport> a = SimulateRun(c, cache, 3), b = SimulateRun(c, cache, 3);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->wall_time, b->wall_time);
  EXPECT_EQ(a->events.size(), b->events.size());
  for (size_t i = 0; i < a->events.size(); ++i) EXPECT_EQ(a->events[i].what, b->events[i].what);
  Result<RunReport> other = SimulateRun(c, cache, 4);
  EXPECT_NE(other->wall_time, a->wall_time);
}

TEST(RunSimulationTest, AddedFaultKeepsTheStochasticHistory) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 20000;
  c.spare_nodes = 16;
  c.failures.enabled = true;
  c.failures.node_day_rate = 0.2;  // 3.2 failures a day on 16 nodes
  StepTimeCache cache(SimpleStep());
  Result<RunReport> base = SimulateRun(c, cache, 1);
  c.faults.push_back(Fault(ScheduledFault::Kind::kGpu, 37, Time::Hours(16)));
  Result<RunReport> w = SimulateRun(c, cache, 1);
  ASSERT_TRUE(base.ok() && w.ok());
  // Every stochastic failure of the baseline happens in the what-if at the same time on the
  // same node, unless the node was already down there.
  size_t matched = 0, j = 0;
  for (const FailureRecord& f : base->failure_records) {
    while (j < w->failure_records.size() && w->failure_records[j].at < f.at) ++j;
    if (j < w->failure_records.size() && w->failure_records[j].at == f.at &&
        w->failure_records[j].what == f.what) {
      ++matched;
    }
  }
  EXPECT_GE(matched + 1, base->failure_records.size());
  EXPECT_GT(base->failure_records.size(), 5u);
  // Only the added fault is marked scheduled.
  int scheduled = 0;
  for (const FailureRecord& f : w->failure_records) scheduled += f.scheduled ? 1 : 0;
  EXPECT_EQ(scheduled, 1);
  for (const FailureRecord& f : base->failure_records) EXPECT_FALSE(f.scheduled);
}

TEST(RunSimulationTest, AutoIntervalIsDalysOptimum) {
  RunConfig c = DemoLikeConfig();
  c.failures.enabled = true;
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kAuto;
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double m = 86400.0 / (16 * kLlama3NodeDayRate);
  EXPECT_NEAR(r->interval_used_s, DalyIntervalSeconds(24.5, m), 1e-6);
}

TEST(RunSimulationTest, ARunThatCannotFinishIsReportedNotSimulatedForever) {
  RunConfig c = DemoLikeConfig();
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kNever;
  c.failures.enabled = true;
  c.failures.node_day_rate = 1.0;  // 16 failures a day; the run needs 28 h without one
  StepTimeCache cache(SimpleStep());
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("checkpoint more often"), std::string::npos);
}

TEST(RunConfigValidationTest, RejectsBadInputWithClearMessages) {
  StepTimeCache cache(SimpleStep());
  auto message = [&](RunConfig c) {
    Result<RunReport> r = SimulateRun(c, cache);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    return r.status().message();
  };
  RunConfig c = DemoLikeConfig();
  c.faults.push_back(Fault(ScheduledFault::Kind::kGpu, 128, Time::Hours(1)));
  EXPECT_NE(message(c).find("gpu 128 does not exist (valid: 0..127)"), std::string::npos);

  c = DemoLikeConfig();
  c.faults.push_back(Fault(ScheduledFault::Kind::kGpu, 3, Time::Days(40)));
  EXPECT_NE(message(c).find("after the end of training"), std::string::npos);

  c = DemoLikeConfig();
  c.checkpoint.interval.kind = CheckpointInterval::Kind::kSteps;
  c.checkpoint.interval.steps = 0;
  EXPECT_NE(message(c).find("N > 0"), std::string::npos);

  c = DemoLikeConfig();
  c.failures.node_day_rate = -0.1;
  EXPECT_NE(message(c).find("node_day_rate"), std::string::npos);

  c = DemoLikeConfig();
  c.cluster_nodes = 17;
  c.spare_nodes = 4;
  EXPECT_NE(message(c).find("more than the cluster can hold"), std::string::npos);

  c = DemoLikeConfig();
  c.total_steps = 0;
  c.wall_time_limit = Time::Hours(20);
  c.faults.push_back(Fault(ScheduledFault::Kind::kGpu, 3, Time::Hours(20)));
  EXPECT_NE(message(c).find("after the end of training (training.duration 20h)"),
            std::string::npos);

  c = DemoLikeConfig();
  c.recovery.min_dp = 3;
  EXPECT_NE(message(c).find("min_dp"), std::string::npos);

  c = DemoLikeConfig();
  c.faults.push_back(Fault(ScheduledFault::Kind::kStraggler, 3, Time::Hours(1), Time(), 0.5));
  EXPECT_NE(message(c).find("slowdown factor"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::run
