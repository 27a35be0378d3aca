// CompareGroupRepeated on hand-built event streams: a step of k groups is a warm-up, k groups of
// events one period apart, and a cool-down moved by the k groups. Built so, the streams of k and
// k + 1 groups differ by one more copy of the last group; a drift inside the groups that the
// steps' endings do not show (slack a wait absorbs, as in an uneven pipeline's transient) must be
// caught by comparing the last group with the one inserted.
#include "step/event_streams.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace trainsim::step {
namespace {

constexpr int64_t kPeriod = 1000;

// Warm-up events at 0, 5, 9; group j (0-based) at start + j·period + offsets (+ its drift);
// cool-down events after the last group. Each event's kind is its place in the warm-up, the
// group or the cool-down (as the engine tags events by the code that scheduled them).
EventStream Stream(int groups, const std::vector<int64_t>& drift = {}) {
  EventStream s;
  auto add = [&s](int64_t time, uint32_t kind) {
    s.times.push_back(time);
    s.kinds.push_back(kind);
  };
  add(0, 1);
  add(5, 2);
  add(9, 3);
  const int64_t start = 10;
  for (int j = 0; j < groups; ++j) {
    const int64_t d = j < int(drift.size()) ? drift[size_t(j)] : 0;
    uint32_t kind = 10;
    for (int64_t offset : {int64_t{0}, int64_t{100}, int64_t{101}, 400 + d, int64_t{700}}) {
      add(start + j * kPeriod + offset, kind++);
    }
  }
  const int64_t end = start + groups * kPeriod;
  uint32_t kind = 20;
  for (int64_t offset : {0, 50, 300, 301}) add(end + offset, kind++);
  return s;
}

TEST(EventStreamsTest, PeriodicStepsDifferByOneRepeatedGroup) {
  const GroupInsert g = CompareGroupRepeated(Stream(3), Stream(4));
  EXPECT_TRUE(g.inserted);
  EXPECT_EQ(g.events, 5u);
  EXPECT_EQ(g.shift, kPeriod);
}

// Group j's fourth event comes 30, 20, 10 ns late in groups 2, 3, 4 (a shrinking slack): every
// step's ending is the one before's moved by exactly one period, so comparing the endings alone
// would pass; the last group and the one inserted differ.
TEST(EventStreamsTest, DriftInsideTheGroupsFailsThoughTheEndingsRepeat) {
  const std::vector<int64_t> drift = {0, 0, 30, 20, 10};
  for (int groups : {2, 3, 4}) {
    const EventStream a = Stream(groups, drift), b = Stream(groups + 1, drift);
    for (size_t k = 1; k <= 4; ++k) {
      ASSERT_EQ(b.times[b.times.size() - k] - a.times[a.times.size() - k], kPeriod)
          << "the endings repeat";
    }
    EXPECT_FALSE(CompareGroupRepeated(a, b).inserted) << groups;
  }
}

// A drift that has settled (groups 2 on all 30 ns late) is a steady state from there: the step
// whose last group is the first late one is refused, the next accepted.
TEST(EventStreamsTest, ATransientThatSettlesIsAcceptedOnceTwoGroupsAreTheSame) {
  const std::vector<int64_t> drift = {0, 0, 30, 30, 30, 30};
  EXPECT_FALSE(CompareGroupRepeated(Stream(2, drift), Stream(3, drift)).inserted);
  const GroupInsert g = CompareGroupRepeated(Stream(3, drift), Stream(4, drift));
  EXPECT_TRUE(g.inserted);
  EXPECT_EQ(g.shift, kPeriod);
}

// One event of the longer step moved by 7 ns, in an early group, in the group before the
// parting point or in the group inserted: refused each time, though the ending still repeats.
TEST(EventStreamsTest, AnyGroupOfTheLongerStepOffByMoreThanTheJitterIsRefused) {
  // Group j's event k is at index 3 + 5·j + k; group 3 is the one inserted.
  for (size_t index :
       {size_t{5}, size_t{10}, size_t{3 + 5 * 2 + 3}, size_t{3 + 5 * 3}, size_t{3 + 5 * 3 + 4}}) {
    EventStream b = Stream(4);
    b.times[index] += 7;
    EXPECT_FALSE(CompareGroupRepeated(Stream(3), b).inserted) << index;
  }
}

TEST(EventStreamsTest, AnEndingEventTwoNanosecondsOffIsNotARepeatedGroup) {
  EventStream b = Stream(4);
  b.times[b.times.size() - 2] += 2;
  EXPECT_FALSE(CompareGroupRepeated(Stream(3), b).inserted);
}

// The engine rounds each duration to its nanosecond from doubles, so two copies of a group in a
// repeating state can place an event 1 ns apart (kJitterNs): that is still a repeated group.
TEST(EventStreamsTest, EventsOneNanosecondApartStillMakeARepeatedGroup) {
  const EventStream a = Stream(3);
  EventStream b = Stream(4);
  b.times[b.times.size() - 2] += 1;  // in the ending
  b.times[b.times.size() - 7] -= 1;  // in the group inserted
  const GroupInsert g = CompareGroupRepeated(a, b);
  EXPECT_TRUE(g.inserted);
  EXPECT_EQ(g.events, 5u);
  EXPECT_EQ(g.shift, kPeriod);
}

// Without a whole group before the parting point there is nothing to find again.
TEST(EventStreamsTest, AStepWithoutAWholeGroupBeforeItsEndingIsNotCompared) {
  EXPECT_FALSE(CompareGroupRepeated(Stream(0), Stream(1)).inserted);
  EXPECT_TRUE(CompareGroupRepeated(Stream(1), Stream(2)).inserted);
}

TEST(EventStreamsTest, StreamsThatAreNotOneGroupLongerAreNotCompared) {
  const EventStream a = Stream(3);
  EXPECT_FALSE(CompareGroupRepeated(a, a).inserted);
  EXPECT_FALSE(CompareGroupRepeated(Stream(4), a).inserted);
  EXPECT_FALSE(CompareGroupRepeated({}, a).inserted);
  // `a` a prefix of the longer stream: no ending of `a` to find again.
  EventStream longer = a;
  longer.times.push_back(a.times.back() + 1);
  longer.kinds.push_back(30);
  EXPECT_FALSE(CompareGroupRepeated(a, longer).inserted);
}

// The same times, but one event of another kind (other code ran then): in the group inserted,
// in the group before the parting point or in the ending, it is not a repeated group. Two
// streams without kinds are compared by their times alone.
TEST(EventStreamsTest, AnEventOfAnotherKindAtTheSameTimeIsNotARepeatedGroup) {
  for (size_t index : {size_t{3 + 5 * 3 + 1}, size_t{3 + 5 * 2 + 2}, size_t{3 + 5 * 4 + 2}}) {
    EventStream b = Stream(4);
    b.kinds[index] = 99;
    EXPECT_FALSE(CompareGroupRepeated(Stream(3), b).inserted) << index;
    // Kinds on one stream only, or not one per event: not compared, so not accepted.
    b.kinds.clear();
    EXPECT_FALSE(CompareGroupRepeated(Stream(3), b).inserted) << index;
    EventStream a = Stream(3);
    a.kinds.pop_back();
    EXPECT_FALSE(CompareGroupRepeated(a, Stream(4)).inserted) << index;
    // Neither with kinds: times alone.
    a.kinds.clear();
    EXPECT_TRUE(CompareGroupRepeated(a, b).inserted) << index;
  }
}

// Groups that alternate between two kinds (the fourth event 30 ns late in every other group):
// no step is the one before with its last group repeated, but each is the one two groups
// shorter with its last two repeated, two periods later.
TEST(EventStreamsTest, AlternatingGroupsRepeatInPairs) {
  const std::vector<int64_t> alternate = {0, 30, 0, 30, 0, 30, 0};
  for (int groups : {3, 4}) {
    EXPECT_FALSE(
        CompareGroupRepeated(Stream(groups, alternate), Stream(groups + 1, alternate)).inserted)
        << groups;
  }
  const GroupInsert g = CompareGroupRepeated(Stream(3, alternate), Stream(5, alternate));
  EXPECT_TRUE(g.inserted);
  EXPECT_EQ(g.events, 10u);
  EXPECT_EQ(g.shift, 2 * kPeriod);
}

}  // namespace
}  // namespace trainsim::step
