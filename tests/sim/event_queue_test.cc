#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "sim/random.h"

namespace trainsim::sim {
namespace {

// Pops and runs everything; handlers append their label to `log`, which is returned.
std::vector<int> DrainLabels(EventQueue& q, std::vector<int>& log) {
  while (!q.empty()) {
    EventQueue::Event ev = q.Pop();
    ev.handler();
  }
  return log;
}

TEST(EventQueueTest, PopsInTimeOrder) {
  EventQueue q;
  std::vector<int> log;
  for (int t : {50, 10, 40, 20, 30}) {
    q.Push(Time::Nanos(t), 0, [&log, t] { log.push_back(t); });
  }
  EXPECT_EQ(DrainLabels(q, log), (std::vector<int>{10, 20, 30, 40, 50}));
}

TEST(EventQueueTest, TiesRunByPriorityThenInsertionOrder) {
  EventQueue q;
  std::vector<int> log;
  // Same time; labels are (priority * 10 + insertion index within that priority).
  q.Push(Time::Nanos(5), 1, [&] { log.push_back(10); });
  q.Push(Time::Nanos(5), 0, [&] { log.push_back(0); });
  q.Push(Time::Nanos(5), -1, [&] { log.push_back(-10); });
  q.Push(Time::Nanos(5), 1, [&] { log.push_back(11); });
  q.Push(Time::Nanos(5), 0, [&] { log.push_back(1); });
  q.Push(Time::Nanos(4), 9, [&] { log.push_back(99); });  // earlier time beats any priority
  EXPECT_EQ(DrainLabels(q, log), (std::vector<int>{99, -10, 0, 1, 10, 11}));
}

TEST(EventQueueTest, TiesRunInInsertionOrder) {
  EventQueue q;
  std::vector<int> log;
  for (int i = 0; i < 1000; ++i) q.Push(Time::Nanos(7), 0, [&log, i] { log.push_back(i); });
  DrainLabels(q, log);
  ASSERT_EQ(log.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(log[i], i);
}

TEST(EventQueueTest, IdsAreNonZeroUniqueAndIncreasing) {
  EventQueue q;
  EventId prev = 0;
  for (int i = 0; i < 100; ++i) {
    EventId id = q.Push(Time::Nanos(100 - i), 0, [] {});
    EXPECT_GT(id, prev);
    prev = id;
    if (i % 3 == 0) q.Pop();  // slots get reused; ids must not be
  }
}

TEST(EventQueueTest, CancelledEventNeverRunsAndSizeCountsLiveOnly) {
  EventQueue q;
  int ran = 0;
  EventId a = q.Push(Time::Nanos(1), 0, [&] { ran += 1; });
  EventId b = q.Push(Time::Nanos(2), 0, [&] { ran += 10; });
  EventId c = q.Push(Time::Nanos(3), 0, [&] { ran += 100; });
  EXPECT_EQ(q.size(), 3u);
  EXPECT_TRUE(q.Cancel(a));  // the top: dropped when it surfaces
  EXPECT_TRUE(q.Cancel(c));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_FALSE(q.empty());
  EXPECT_EQ(q.NextTime(), Time::Nanos(2));
  EventQueue::Event ev = q.Pop();
  EXPECT_EQ(ev.id, b);
  ev.handler();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(ran, 10);
}

TEST(EventQueueTest, CancelTwiceAfterPopOrUnknownReturnsFalse) {
  EventQueue q;
  EventId a = q.Push(Time::Nanos(1), 0, [] {});
  EventId b = q.Push(Time::Nanos(2), 0, [] {});
  EXPECT_TRUE(q.Cancel(a));
  EXPECT_FALSE(q.Cancel(a));
  EXPECT_EQ(q.Pop().id, b);
  EXPECT_FALSE(q.Cancel(b));  // already popped
  EXPECT_FALSE(q.Cancel(0));  // 0 is never an id
  EXPECT_FALSE(q.Cancel(~EventId{0}));
  // Slots are reused after a pop: the old ids must still not cancel the new events.
  EventId c = q.Push(Time::Nanos(3), 0, [] {});
  EventId d = q.Push(Time::Nanos(4), 0, [] {});
  EXPECT_FALSE(q.Cancel(a));
  EXPECT_FALSE(q.Cancel(b));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_TRUE(q.Cancel(d));
  EXPECT_TRUE(q.Cancel(c));
  EXPECT_TRUE(q.empty());
}

TEST(EventQueueTest, CancelReleasesCapturedStateImmediately) {
  EventQueue q;
  auto token = std::make_shared<int>(1);
  EventId id = q.Push(Time::Nanos(10), 0, [token] {});
  EXPECT_EQ(token.use_count(), 2);
  q.Cancel(id);
  EXPECT_EQ(token.use_count(), 1);
}

TEST(EventQueueTest, ManyCancellationsKeepOrderAcrossCompaction) {
  // Randomised against a simple model: cancel most events (forcing compactions), then check
  // that exactly the survivors pop, in (time, priority, insertion) order.
  Rng rng(42);
  EventQueue q;
  struct Rec {
    int64_t t;
    int prio;
    int index;
    EventId id;
    bool cancelled;
  };
  std::vector<Rec> recs;
  std::vector<int> popped;
  for (int i = 0; i < 5000; ++i) {
    Rec r{static_cast<int64_t>(rng.UniformInt(500)), static_cast<int>(rng.UniformInt(3)), i, 0,
          false};
    r.id = q.Push(Time::Nanos(r.t), r.prio, [&popped, i] { popped.push_back(i); });
    recs.push_back(r);
    if (rng.Uniform() < 0.8) {
      Rec& victim = recs[rng.UniformInt(recs.size())];
      EXPECT_EQ(q.Cancel(victim.id), !victim.cancelled);
      victim.cancelled = true;
    }
  }
  size_t live = 0;
  for (const Rec& r : recs) live += !r.cancelled;
  EXPECT_EQ(q.size(), live);
  std::vector<Rec> expected;
  for (const Rec& r : recs) {
    if (!r.cancelled) expected.push_back(r);
  }
  std::stable_sort(expected.begin(), expected.end(), [](const Rec& a, const Rec& b) {
    return a.t != b.t ? a.t < b.t : a.prio < b.prio;
  });
  int64_t last_t = -1;
  while (!q.empty()) {
    EventQueue::Event ev = q.Pop();
    EXPECT_GE(ev.time.nanos(), last_t);
    last_t = ev.time.nanos();
    ev.handler();
  }
  ASSERT_EQ(popped.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(popped[i], expected[i].index);
}

TEST(EventQueueTest, InterleavedPushPopMatchesSortedModel) {
  // Hold-model traffic (as in engine_bench) against a std::set of (time, priority, id): every
  // pop must be the model's minimum. Exercises partial last heap nodes and sift in both ways.
  Rng rng(7);
  EventQueue q;
  std::set<std::tuple<int64_t, int, EventId>> model;
  int64_t now = 0;
  for (int i = 0; i < 20000; ++i) {
    const int pushes = static_cast<int>(rng.UniformInt(3));  // 0..2 pushes, then one pop
    for (int k = 0; k < pushes; ++k) {
      const int64_t t = now + static_cast<int64_t>(rng.UniformInt(1000));
      const int prio = static_cast<int>(rng.UniformInt(3)) - 1;
      model.emplace(t, prio, q.Push(Time::Nanos(t), prio, [] {}));
    }
    ASSERT_EQ(q.size(), model.size());
    if (model.empty()) continue;
    EventQueue::Event ev = q.Pop();
    ASSERT_EQ(std::make_tuple(ev.time.nanos(), ev.priority, ev.id), *model.begin()) << i;
    model.erase(model.begin());
    now = ev.time.nanos();
  }
}

}  // namespace
}  // namespace trainsim::sim
