#include "sim/engine.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace trainsim::sim {
namespace {

TEST(EngineTest, RunsEventsInTimeOrderAndAdvancesNow) {
  Engine e;
  std::vector<int64_t> seen;
  for (int64_t t : {30, 10, 20}) {
    e.ScheduleAt(Time::Nanos(t), [&e, &seen] { seen.push_back(e.now().nanos()); });
  }
  EXPECT_EQ(e.pending(), 3u);
  e.Run();
  EXPECT_EQ(seen, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(e.now(), Time::Nanos(30));
  EXPECT_EQ(e.events_processed(), 3u);
  EXPECT_TRUE(e.empty());
}

// The streams the steady-state extension compares: every event's time, and a kind that is the
// same for events scheduled from the same code and differs between two places.
TEST(EngineTest, RecordedEventsCarryTheirTimeAndTheKindOfTheirHandler) {
  Engine e;
  std::vector<int64_t> times;
  std::vector<uint32_t> kinds;
  e.RecordTimes(&times, &kinds);
  int a = 0, b = 0;
  for (int64_t t : {10, 30}) e.ScheduleAt(Time::Nanos(t), [&a] { ++a; });
  e.ScheduleAt(Time::Nanos(20), [&b] { ++b; });
  e.Run();
  EXPECT_EQ(times, (std::vector<int64_t>{10, 20, 30}));
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0], kinds[2]);
  EXPECT_NE(kinds[0], kinds[1]);
  // Stopped: nothing more is appended; times alone when no kinds are asked for.
  e.RecordTimes(nullptr);
  e.ScheduleAt(Time::Nanos(40), [&a] { ++a; });
  e.Run();
  EXPECT_EQ(times.size(), 3u);
  std::vector<int64_t> only;
  e.RecordTimes(&only);
  e.ScheduleAt(Time::Nanos(50), [&b] { ++b; });
  e.Run();
  EXPECT_EQ(only, (std::vector<int64_t>{50}));
  EXPECT_EQ(kinds.size(), 3u);
  EXPECT_EQ(a + b, 5);
  // The same code at another priority is another kind; an empty handler is kind 0.
  e.RecordTimes(&times, &kinds);
  const auto inc = [&a] { ++a; };
  e.ScheduleAt(Time::Nanos(60), inc, 1);
  e.ScheduleAt(Time::Nanos(70), inc);
  e.ScheduleAt(Time::Nanos(75), inc);
  e.ScheduleAt(Time::Nanos(80), nullptr);
  e.Run();
  ASSERT_EQ(kinds.size(), 7u);
  EXPECT_NE(kinds[3], kinds[4]);
  EXPECT_EQ(kinds[4], kinds[5]);
  EXPECT_EQ(kinds[6], 0u);
}

TEST(EngineTest, ScheduleIsRelativeToNow) {
  Engine e;
  Time fired;
  e.ScheduleAt(Time::Seconds(5), [&] { e.Schedule(Time::Seconds(2), [&] { fired = e.now(); }); });
  e.Run();
  EXPECT_EQ(fired, Time::Seconds(7));
}

TEST(EngineTest, TiesRunByPriorityThenInsertionOrder) {
  Engine e;
  std::string order;
  e.Schedule(
      Time::Zero(), [&] { order += "b"; }, 1);
  e.Schedule(
      Time::Zero(), [&] { order += "a"; }, 0);
  e.Schedule(
      Time::Zero(), [&] { order += "c"; }, 1);
  e.Schedule(
      Time::Zero(), [&] { order += "z"; }, -5);
  e.Run();
  EXPECT_EQ(order, "zabc");
}

TEST(EngineTest, HandlersMayScheduleAndCancelDuringRun) {
  Engine e;
  std::vector<std::string> log;
  EventId victim = e.ScheduleAt(Time::Nanos(50), [&] { log.push_back("victim"); });
  e.ScheduleAt(Time::Nanos(10), [&] {
    log.push_back("first");
    EXPECT_TRUE(e.Cancel(victim));
    EXPECT_FALSE(e.Cancel(victim));
    // Scheduled now, at the current time: runs in this same instant, after already-queued ties.
    e.Schedule(Time::Zero(), [&] { log.push_back("same-instant"); });
    e.Schedule(Time::Nanos(5), [&] {
      log.push_back("chained");
      e.Schedule(Time::Nanos(100), [&] { log.push_back("last"); });
    });
  });
  e.ScheduleAt(Time::Nanos(10), [&] { log.push_back("tie"); });
  e.Run();
  EXPECT_EQ(log, (std::vector<std::string>{"first", "tie", "same-instant", "chained", "last"}));
  EXPECT_EQ(e.now(), Time::Nanos(115));
  EXPECT_EQ(e.events_processed(), 5u);
}

TEST(EngineTest, HandlerCanCancelItselfHarmlessly) {
  Engine e;
  EventId self = 0;
  bool cancel_result = true;
  self = e.Schedule(Time::Nanos(1), [&] { cancel_result = e.Cancel(self); });
  e.Run();
  EXPECT_FALSE(cancel_result);  // it is running: it already left the queue
}

TEST(EngineTest, CancelAfterRunReturnsFalse) {
  Engine e;
  EventId id = e.Schedule(Time::Nanos(1), [] {});
  e.Run();
  EXPECT_FALSE(e.Cancel(id));
}

TEST(EngineTest, RunUntilStopsAtBoundInclusiveAndAdvancesNow) {
  Engine e;
  std::vector<int64_t> seen;
  for (int64_t t : {5, 10, 15}) {
    e.ScheduleAt(Time::Nanos(t), [&e, &seen] { seen.push_back(e.now().nanos()); });
  }
  e.RunUntil(Time::Nanos(10));  // the event at exactly 10 runs
  EXPECT_EQ(seen, (std::vector<int64_t>{5, 10}));
  EXPECT_EQ(e.now(), Time::Nanos(10));
  EXPECT_EQ(e.pending(), 1u);

  e.RunUntil(Time::Nanos(12));  // nothing to run, but time still moves to the bound
  EXPECT_EQ(e.now(), Time::Nanos(12));
  EXPECT_EQ(seen.size(), 2u);

  e.RunUntil(Time::Nanos(11));  // an earlier bound never moves time back
  EXPECT_EQ(e.now(), Time::Nanos(12));

  e.RunUntil(Time::Seconds(1));
  EXPECT_EQ(seen, (std::vector<int64_t>{5, 10, 15}));
  EXPECT_EQ(e.now(), Time::Seconds(1));
}

TEST(EngineTest, RunUntilRunsEventsScheduledByHandlersWithinTheBound) {
  Engine e;
  int count = 0;
  // A self-rescheduling tick every 10 ns; RunUntil(95) must see ticks at 0..90 only.
  std::function<void()> tick = [&] {
    ++count;
    e.Schedule(Time::Nanos(10), tick);
  };
  e.Schedule(Time::Zero(), tick);
  e.RunUntil(Time::Nanos(95));
  EXPECT_EQ(count, 10);
  EXPECT_EQ(e.now(), Time::Nanos(95));
  EXPECT_EQ(e.pending(), 1u);
}

TEST(EngineTest, RunUntilSkipsCancelledEventsAtTheFront) {
  Engine e;
  bool ran = false;
  EventId a = e.ScheduleAt(Time::Nanos(5), [&] { ran = true; });
  e.ScheduleAt(Time::Nanos(50), [] {});
  e.Cancel(a);
  e.RunUntil(Time::Nanos(20));
  EXPECT_FALSE(ran);
  EXPECT_EQ(e.events_processed(), 0u);
  EXPECT_EQ(e.pending(), 1u);
}

TEST(EngineTest, StepRunsOneEventAndReportsEmpty) {
  Engine e;
  int n = 0;
  e.Schedule(Time::Nanos(3), [&] { ++n; });
  e.Schedule(Time::Nanos(4), [&] { ++n; });
  EXPECT_TRUE(e.Step());
  EXPECT_EQ(n, 1);
  EXPECT_EQ(e.now(), Time::Nanos(3));
  EXPECT_TRUE(e.Step());
  EXPECT_FALSE(e.Step());
  EXPECT_EQ(n, 2);
}

TEST(EngineTest, DelayThatWouldOverflowSaturatesAtEndOfTime) {
  Engine e;
  e.ScheduleAt(Time::Seconds(1), [] {});
  e.Run();
  bool ran = false;
  e.Schedule(Time::Max(), [&] { ran = true; });  // now + Max overflows int64 ns
  e.RunUntil(Time::Days(365 * 200));
  EXPECT_FALSE(ran);
  e.Run();
  EXPECT_TRUE(ran);
  EXPECT_TRUE(e.now().is_max());
}

TEST(EngineTest, SameScheduleGivesSameTrace) {
  auto run = [] {
    Engine e;
    std::vector<int> trace;
    for (int i = 0; i < 200; ++i) {
      e.ScheduleAt(
          Time::Nanos((i * 37) % 50), [&trace, i] { trace.push_back(i); }, i % 3);
    }
    e.Run();
    return trace;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace trainsim::sim
