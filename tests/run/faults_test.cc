// Faults as they happen (issue 15): detection by mechanism, stragglers that belong to their
// hardware and can be evicted, silent data corruption with checkpoint retention, the checkpoint
// interval's storage bound, and lost work as one number. Every expectation is worked out from
// the defaults (checkpoint/policy.h) and the closed forms of run_test_util.h's SimpleStep:
// 20 s steps, hourly SYNC checkpoints of 24.5 s, checkpoint k completes at k · (3600 + 24.5) s.
#include <gtest/gtest.h>

#include <string>

#include "run/whatif.h"
#include "tests/run/run_test_util.h"

namespace trainsim::run {
namespace {

using checkpoint::DetectionMechanism;
using checkpoint::StragglerAction;
using sim::Time;
using testing::DemoLikeConfig;
using testing::Fault;
using testing::PhasesMatchBreakdown;
using testing::SimpleStep;
using K = ScheduledFault::Kind;

const Time kCheckpointCycle = Time::Hours(1) + Time::Millis(24500);

Result<RunReport> RunWith(RunConfig c, std::vector<ScheduledFault> faults) {
  c.faults = std::move(faults);
  StepTimeCache cache(SimpleStep());
  return SimulateRun(c, cache);
}

TEST(DetectionTest, NcclErrorDefaultIsIbTimeoutTimesTries) {
  // NCCL_IB_TIMEOUT 20: 4.096 us · 2^20 = 4.294967296 s per try; NCCL_IB_RETRY_CNT 7: 8 tries.
  EXPECT_EQ(checkpoint::IbRetryExhaustion(20, 7), Time::Nanos(4294967296LL * 8));
  const checkpoint::DetectionDelays d;
  EXPECT_EQ(d.process_exit, Time::Seconds(5));
  EXPECT_EQ(d.heartbeat, Time::Seconds(15));  // 3 missed keep-alives × 5 s
  EXPECT_EQ(d.collective_timeout, Time::Minutes(10));
}

TEST(DetectionTest, EachFaultKindIsDetectedByItsMechanismAfterItsDelay) {
  const checkpoint::DetectionDelays d;
  struct Case {
    K kind;
    int id;
    DetectionMechanism mechanism;
    Time delay;
  };
  const Case cases[] = {
      {K::kSoftwareHang, 0, DetectionMechanism::kProcessExit, d.process_exit},
      {K::kGpu, 37, DetectionMechanism::kProcessExit, d.process_exit},
      {K::kNode, 4, DetectionMechanism::kHeartbeat, d.heartbeat},
      {K::kNic, 12, DetectionMechanism::kNcclError, d.nccl_error},
      {K::kLinkDown, 5, DetectionMechanism::kNcclError, d.nccl_error},
      {K::kHang, 9, DetectionMechanism::kCollectiveTimeout, d.collective_timeout},
  };
  for (const Case& k : cases) {
    Result<RunReport> r = RunWith(DemoLikeConfig(), {Fault(k.kind, k.id, Time::Hours(16))});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->breakdown.detection, k.delay) << Fault(k.kind, k.id, Time()).KindName();
    ASSERT_EQ(r->failure_records.size(), 1u);
    EXPECT_EQ(r->failure_records[0].mechanism, k.mechanism);
    EXPECT_EQ(r->failure_records[0].detected_at, Time::Hours(16) + k.delay);
    EXPECT_EQ(r->failure_records[0].cause,
              "SCHEDULED_" + std::string(Fault(k.kind, k.id, Time()).KindName()));
  }
}

TEST(DetectionTest, ACrashCostsLessThanAHangAndALinkErrorLessThanAHang) {
  Result<RunReport> crash =
      RunWith(DemoLikeConfig(), {Fault(K::kSoftwareHang, 0, Time::Hours(16))});
  Result<RunReport> link = RunWith(DemoLikeConfig(), {Fault(K::kLinkDown, 5, Time::Hours(16))});
  Result<RunReport> hang = RunWith(DemoLikeConfig(), {Fault(K::kHang, 9, Time::Hours(16))});
  ASSERT_TRUE(crash.ok() && link.ok() && hang.ok());
  EXPECT_LT(crash->wall_time, hang->wall_time);
  EXPECT_LT(link->breakdown.detection, hang->breakdown.detection);
}

TEST(DetectionTest, ScenarioOverridesOneMechanismOrAllOfThem) {
  RunConfig c = DemoLikeConfig();
  c.recovery.detect.process_exit = Time::Seconds(30);
  Result<RunReport> r = RunWith(c, {Fault(K::kSoftwareHang, 0, Time::Hours(16))});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->breakdown.detection, Time::Seconds(30));
  c = DemoLikeConfig();
  c.recovery.uniform_detection = true;  // legacy recovery.detection_delay: every kind alike
  c.recovery.detection = DetectionMechanism::kHeartbeat;
  c.recovery.detection_delay = Time::Seconds(42);
  r = RunWith(c, {Fault(K::kNic, 12, Time::Hours(16))});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->breakdown.detection, Time::Seconds(42));
  EXPECT_EQ(r->failure_records[0].mechanism, DetectionMechanism::kHeartbeat);
}

TEST(StragglerTest, SlowdownEndsWhenItsNodeIsReplaced) {
  // gpu 5 (node 0) 1.3× slower from 16 h for 4 h; gpu 5 fails at 17 h and node 0 is replaced.
  Result<RunReport> r =
      RunWith(DemoLikeConfig(), {Fault(K::kStraggler, 5, Time::Hours(16), Time::Hours(4), 1.3),
                                 Fault(K::kGpu, 5, Time::Hours(17))});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(PhasesMatchBreakdown(*r));
  bool ended_at_replacement = false, recovered_at_20h = false;
  int64_t resumed_step = -1, first_ckpt_after = -1;
  for (const RunEvent& e : r->events) {
    if (e.kind == RunEventKind::kSlowdownEnded) {
      ended_at_replacement |= e.at == Time::Hours(17);
      recovered_at_20h |= e.at == Time::Hours(20);
    }
    if (e.kind == RunEventKind::kResumed && resumed_step < 0) resumed_step = e.step;
    if (e.kind == RunEventKind::kCheckpointWritten && resumed_step >= 0 && first_ckpt_after < 0) {
      first_ckpt_after = e.step;
    }
  }
  EXPECT_TRUE(ended_at_replacement);
  EXPECT_FALSE(recovered_at_20h);
  // After the restart the step is healthy again: an hour of training is 3600 / 20 = 180 steps
  // (a 1.3× step of 26 s would give ceil(3600 / 26) = 139).
  EXPECT_EQ(first_ckpt_after - resumed_step, 180);
}

TEST(StragglerTest, SlowdownIsItsOwnCategoryAndLowersEveryEfficiencyFigure) {
  Result<RunReport> base = RunWith(DemoLikeConfig(), {});
  Result<RunReport> slow =
      RunWith(DemoLikeConfig(), {Fault(K::kStraggler, 5, Time::Hours(16), Time::Hours(4), 1.3)});
  ASSERT_TRUE(base.ok() && slow.ok());
  EXPECT_EQ(slow->breakdown.useful, base->breakdown.useful);  // same steps at the healthy split
  EXPECT_GT(slow->breakdown.slowdown, Time());
  // The slower job is longer by its slowdown and the checkpoint stalls of the extra wall time.
  EXPECT_EQ(slow->wall_time - base->wall_time,
            slow->breakdown.slowdown +
                (slow->breakdown.checkpoint_stall - base->breakdown.checkpoint_stall));
  EXPECT_LT(slow->ettr, base->ettr);
  EXPECT_LT(slow->useful_compute_fraction, base->useful_compute_fraction);
  // 4 h of wall time at 26 s instead of 20 s per step: 6/26 of it is slowdown, 3,323 s, within
  // the two step boundaries and one 24.5 s checkpoint stall that fall inside the window.
  EXPECT_NEAR(slow->breakdown.slowdown.seconds(), 4 * 3600.0 * 6 / 26, 2 * 26 + 24.5);
}

TEST(StragglerTest, EvictingA13xStragglerCostsLessThanIgnoringItOver4Hours) {
  RunConfig c = DemoLikeConfig();
  const std::vector<ScheduledFault> slow = {
      Fault(K::kStraggler, 5, Time::Hours(16), Time::Hours(4), 1.3)};
  c.recovery.straggler.action = StragglerAction::kIgnore;
  Result<RunReport> ignore = RunWith(c, slow);
  c.recovery.straggler.action = StragglerAction::kEvict;
  Result<RunReport> evict = RunWith(c, slow);
  ASSERT_TRUE(ignore.ok() && evict.ok()) << evict.status().message();
  EXPECT_TRUE(PhasesMatchBreakdown(*evict));
  EXPECT_EQ(ignore->evictions, 0);
  EXPECT_EQ(evict->evictions, 1);
  EXPECT_EQ(evict->failures, 0);  // an eviction is not a failure
  // Detected at 16h05m, evicted when checkpoint #16 completes (SYNC: nothing rolled back but the
  // in-flight nothing), so it costs the slowdown until then plus one restart from a spare.
  EXPECT_EQ(evict->breakdown.lost, Time());
  EXPECT_GT(evict->breakdown.restart, Time());
  EXPECT_LT(evict->wall_time, ignore->wall_time);
  EXPECT_LT(evict->breakdown.slowdown, Time::Minutes(10));
  const FailureRecord& rec = evict->failure_records.at(0);
  EXPECT_TRUE(rec.eviction);
  EXPECT_EQ(rec.cause, "STRAGGLER_EVICTION");
  EXPECT_EQ(rec.mechanism, DetectionMechanism::kStepTime);
  Time ckpt16;
  for (const RunEvent& e : evict->events) {
    if (e.kind == RunEventKind::kCheckpointWritten && e.checkpoint == 16) ckpt16 = e.at;
  }
  EXPECT_EQ(rec.at, ckpt16);
  // Checkpoint #16 is due after an hour of training since #15 (15 · cycle), reached at the first
  // step boundary, so it completes within one 26 s step of 16 · cycle.
  EXPECT_GE(ckpt16, kCheckpointCycle * 16);
  EXPECT_LT(ckpt16, kCheckpointCycle * 16 + Time::Seconds(26));
}

TEST(SdcTest, KeepingOneCheckpointLosesFarMoreThanKeepingThree) {
  // gpu 5 silently corrupts at 16 h; the loss check finds it an hour later (default 1 h). The
  // checkpoints taken after 16 h (#16, written from 16h06m08s) hold corrupted state.
  RunConfig c = DemoLikeConfig();
  const std::vector<ScheduledFault> sdc = {Fault(K::kSdc, 5, Time::Hours(16))};
  c.checkpoint.keep_last = 1;
  Result<RunReport> one = RunWith(c, sdc);
  c.checkpoint.keep_last = 3;
  Result<RunReport> three = RunWith(c, sdc);
  c.checkpoint.keep_last = 0;  // keep all
  Result<RunReport> all = RunWith(c, sdc);
  ASSERT_TRUE(one.ok() && three.ok() && all.ok()) << one.status().message();
  EXPECT_TRUE(PhasesMatchBreakdown(*one));
  // keep_last 1: only #16 is left, written after the corruption: back to step 0, all 17 h lost.
  EXPECT_EQ(one->breakdown.lost, Time::Hours(17));
  EXPECT_EQ(one->failure_records.at(0).restored_checkpoint, 0);
  // keep_last 3: #14..#16 are kept; #15 (completed at 15 · cycle) predates the corruption.
  EXPECT_EQ(three->breakdown.lost, Time::Hours(17) - kCheckpointCycle * 15);
  EXPECT_EQ(three->failure_records.at(0).restored_checkpoint, 15);
  EXPECT_EQ(all->breakdown.lost, three->breakdown.lost);
  const FailureRecord& rec = three->failure_records.at(0);
  EXPECT_EQ(rec.at, Time::Hours(16));
  EXPECT_EQ(rec.mechanism, DetectionMechanism::kLossCheck);
  EXPECT_EQ(rec.detection_delay, Time::Hours(1));
  EXPECT_EQ(rec.detected_at, Time::Hours(17));
  EXPECT_EQ(three->breakdown.detection, Time());  // the loss check is the detection
}

// An SDC whose loss check would fire after training ends was dropped without a word: no failure,
// no lost work, and the corrupted final weights unreported. 5,000 steps of 20 s plus 27 hourly
// SYNC writes end at 100,661.5 s (27.96 h); the corruption at 27.5 h would be found at 28.5 h.
// Checkpoints #1..#27 complete by 27 cycles (27.19 h), before it: #28 on would be corrupt.
TEST(SdcTest, ACorruptionFoundOnlyAfterTheEndIsReportedAsUndetected) {
  RunConfig c = DemoLikeConfig();
  Result<RunReport> r = RunWith(c, {Fault(K::kSdc, 5, Time::Hours(27) + Time::Minutes(30))});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->failures, 0);
  EXPECT_EQ(r->breakdown.lost, Time());
  ASSERT_EQ(r->undetected_corruptions.size(), 1u);
  const UndetectedCorruption& u = r->undetected_corruptions[0];
  EXPECT_EQ(u.at, Time::Hours(27) + Time::Minutes(30));
  EXPECT_EQ(u.would_detect_at, Time::Hours(28) + Time::Minutes(30));
  EXPECT_EQ(u.first_corrupt_checkpoint, 28);
  EXPECT_GT(u.would_detect_at, r->wall_time);
  // Found before the end, it is a failure and not listed.
  Result<RunReport> found = RunWith(c, {Fault(K::kSdc, 5, Time::Hours(16))});
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(found->undetected_corruptions.empty());
  EXPECT_EQ(found->failures, 1);
}

TEST(IntervalTest, AutoIntervalIsNeverShorterThanTheBackgroundWrite) {
  RunConfig c = DemoLikeConfig();
  c.checkpoint.policy = checkpoint::CheckpointPolicy::kAsync;
  c.checkpoint.interval.kind = checkpoint::CheckpointInterval::Kind::kAuto;
  c.checkpoint.hardware.storage_write_GBps = 1;  // 2.45 TB at 1 GB/s: 2,450 s in the background
  c.failures.enabled = true;
  c.failures.node_day_rate = 0.1;  // M = 86,400 / 1.6 = 54,000 s
  c.total_steps = 2000;
  StepTimeCache cache(SimpleStep());
  Result<ResolvedInterval> iv = ResolveInterval(c, cache);
  ASSERT_TRUE(iv.ok()) << iv.status().message();
  EXPECT_DOUBLE_EQ(iv->background_write_s, 2450.0);
  // δ is the 0.77 s snapshot (2.45 TB / 128 GPUs at 25 GB/s): Daly ≈ sqrt(2 δ M) ≈ 290 s.
  EXPECT_LT(iv->daly_s, 400.0);
  EXPECT_EQ(iv->bound, "BACKGROUND_WRITE");
  EXPECT_EQ(iv->interval.every, Time::FromSeconds(2450.0));
  Result<RunReport> r = SimulateRun(c, cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(r->interval_used_s, r->background_write_s);
  EXPECT_EQ(r->interval_bound, "BACKGROUND_WRITE");
}

TEST(LostWorkTest, TheStepInFlightAtTheEndIsNotLostWork) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 0;
  c.wall_time_limit = Time::Days(3);
  Result<RunReport> clean = RunWith(c, {});
  ASSERT_TRUE(clean.ok());
  // 3 days end half a second into a step (WhatIfTest's closed form): unfinished, nothing lost.
  EXPECT_EQ(clean->breakdown.unfinished_step, Time::Millis(500));
  EXPECT_EQ(clean->breakdown.lost, Time());
  Result<RunReport> r = RunWith(c, {Fault(K::kGpu, 37, Time::Hours(16))});
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->breakdown.unfinished_step, Time::Seconds(20));
  EXPECT_EQ(r->breakdown.lost, r->failure_records.at(0).lost);
  EXPECT_EQ(r->breakdown.lost, Time::Hours(16) - kCheckpointCycle * 15);
}

TEST(LostWorkTest, InMemoryPeerPairFailuresChargeEveryRollbackToTheirRecords) {
  RunConfig c = DemoLikeConfig();
  c.checkpoint.policy = checkpoint::CheckpointPolicy::kInMemory;
  c.checkpoint.interval.every = Time::Minutes(10);
  // Nodes 4 and 5 are a peer pair (4's copy lives on 5): both fail within the detection delay.
  Result<RunReport> r = RunWith(c, {Fault(K::kNode, 4, Time::Hours(16)),
                                    Fault(K::kNode, 5, Time::Hours(16) + Time::Seconds(5))});
  ASSERT_TRUE(r.ok()) << r.status().message();
  Time by_records;
  for (const FailureRecord& rec : r->failure_records) by_records += rec.lost;
  EXPECT_EQ(by_records, r->breakdown.lost);
  EXPECT_FALSE(r->failure_records.at(0).restored_from_peer_memory);
}

TEST(WhatIfFaultsTest, AFaultAfterTheEndHasNoEffectAndSaysSo) {
  RunConfig c = DemoLikeConfig();
  c.total_steps = 100;  // 2,000 s
  StepTimeCache cache(SimpleStep());
  Result<WhatIfReport> w = SimulateWhatIf(c, {Fault(K::kNode, 1, Time::Hours(1))}, cache);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->delta_wall_time_s, 0);
  ASSERT_EQ(w->notes.size(), 1u);
  EXPECT_NE(w->notes[0].find("no effect"), std::string::npos);
  EXPECT_TRUE(w->no_effect.at(0));
}

TEST(WhatIfFaultsTest, ADuplicateFaultWarnsAndIsSimulatedOnce) {
  RunConfig c = DemoLikeConfig();
  c.faults.push_back(Fault(K::kGpu, 37, Time::Hours(16)));
  StepTimeCache cache(SimpleStep());
  Result<WhatIfReport> w = SimulateWhatIf(c, {Fault(K::kGpu, 37, Time::Hours(16))}, cache);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->warnings.size(), 1u);
  EXPECT_NE(w->warnings[0].find("duplicates the scenario's faults[0]"), std::string::npos);
  EXPECT_EQ(w->delta_wall_time_s, 0);
}

TEST(WhatIfFaultsTest, AScheduledLinkFaultPrintsAsALink) {
  EXPECT_EQ(Fault(K::kLinkDown, 5, Time::Hours(16)).Describe(), "link 5 goes down at 16h");
  EXPECT_STREQ(Fault(K::kLinkDown, 5, Time::Hours(16)).KindName(), "LINK");
}

TEST(CauseKeyTest, CauseNamesBecomeStableUpperSnakeKeys) {
  EXPECT_EQ(CauseKey("Faulty GPU"), "FAULTY_GPU");
  EXPECT_EQ(CauseKey("GPU (faulty GPU, HBM3, SRAM, GSP, thermal)"), "GPU");
  EXPECT_EQ(CauseKey("Network switch or cable"), "NETWORK_SWITCH_OR_CABLE");
}

}  // namespace
}  // namespace trainsim::run
