// CompareGroupInserted on hand-built event streams: a step of k groups is a warm-up, k groups of
// events one period apart, and a cool-down moved by the k groups. Built so, the streams of k and
// k + 1 groups differ by exactly one inserted group; a drift inside the groups that the steps'
// endings do not show (slack a wait absorbs, as in an uneven pipeline's transient) must be
// caught by comparing the inserted groups themselves.
#include "step/event_streams.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace trainsim::step {
namespace {

constexpr int64_t kPeriod = 1000;

// Warm-up events at 0, 5, 9; group j (0-based) at start + j·period + offsets (+ its drift);
// cool-down events after the last group.
std::vector<int64_t> Stream(int groups, const std::vector<int64_t>& drift = {}) {
  std::vector<int64_t> s = {0, 5, 9};
  const int64_t start = 10;
  for (int j = 0; j < groups; ++j) {
    const int64_t d = j < int(drift.size()) ? drift[size_t(j)] : 0;
    for (int64_t offset : {int64_t{0}, int64_t{100}, int64_t{101}, 400 + d, int64_t{700}}) {
      s.push_back(start + j * kPeriod + offset);
    }
  }
  const int64_t end = start + groups * kPeriod;
  for (int64_t offset : {0, 50, 300, 301}) s.push_back(end + offset);
  return s;
}

TEST(EventStreamsTest, PeriodicStepsDifferByOneInsertedGroup) {
  const GroupInsert ab = CompareGroupInserted(Stream(3), Stream(4));
  ASSERT_TRUE(ab.inserted);
  EXPECT_EQ(ab.events, 5u);
  EXPECT_EQ(ab.shift, kPeriod);
  const GroupInsert bc = CompareGroupInserted(Stream(4), Stream(5), ab.first_difference);
  EXPECT_TRUE(bc.inserted);
  EXPECT_TRUE(SameGroupInserted(ab, bc));
}

// Group j's fourth event comes 30, 20, 10 ns late in groups 2, 3, 4 (a shrinking slack): every
// step's ending is the one before's moved by exactly one period, so comparing the endings alone
// passes; the group inserted into the 4-group step does not recur in the 5-group step.
TEST(EventStreamsTest, DriftInsideTheGroupsFailsThoughTheEndingsRepeat) {
  const std::vector<int64_t> drift = {0, 0, 30, 20, 10};
  const std::vector<int64_t> a = Stream(3, drift), b = Stream(4, drift), c = Stream(5, drift);
  const GroupInsert ab = CompareGroupInserted(a, b);
  ASSERT_TRUE(ab.inserted);
  EXPECT_TRUE(CompareGroupInserted(b, c).inserted) << "the endings alone repeat";
  const GroupInsert bc = CompareGroupInserted(b, c, ab.first_difference);
  EXPECT_FALSE(bc.inserted);
  EXPECT_FALSE(SameGroupInserted(ab, bc));
}

// An event of an early group of the longest step moved by 7 ns: the steps then part before
// the group inserted into the middle one, and its ending still repeats. Not one group later
// than the pair before, so not the same group inserted (a second reviewer's case).
TEST(EventStreamsTest, StepsThatPartBeforeThePreviouslyInsertedGroupAreRefused) {
  const GroupInsert ab = CompareGroupInserted(Stream(3), Stream(4));
  ASSERT_TRUE(ab.inserted);
  for (size_t index : {size_t{5}, size_t{10}, ab.first_difference}) {
    std::vector<int64_t> c = Stream(5);
    c[index] += 7;
    const GroupInsert bc = CompareGroupInserted(Stream(4), c, ab.first_difference);
    EXPECT_FALSE(bc.inserted) << index;
  }
}

TEST(EventStreamsTest, AnEndingEventTwoNanosecondsOffIsNotAnInsertedGroup) {
  std::vector<int64_t> b = Stream(4);
  b[b.size() - 2] += 2;
  EXPECT_FALSE(CompareGroupInserted(Stream(3), b).inserted);
}

// The engine rounds each duration to its nanosecond from doubles, so two copies of a group in a
// repeating state can place an event 1 ns apart (kJitterNs): that is still one inserted group.
TEST(EventStreamsTest, EventsOneNanosecondApartStillMakeAnInsertedGroup) {
  const std::vector<int64_t> a = Stream(3);
  std::vector<int64_t> b = Stream(4);
  b[b.size() - 2] += 1;  // in the ending
  b[b.size() - 7] -= 1;  // in the last group
  const GroupInsert g = CompareGroupInserted(a, b);
  EXPECT_TRUE(g.inserted);
  EXPECT_EQ(g.events, 5u);
  EXPECT_EQ(g.shift, kPeriod);
}

TEST(EventStreamsTest, StreamsThatAreNotOneGroupLongerAreNotCompared) {
  const std::vector<int64_t> a = Stream(3);
  EXPECT_FALSE(CompareGroupInserted(a, a).inserted);
  EXPECT_FALSE(CompareGroupInserted(Stream(4), a).inserted);
  EXPECT_FALSE(CompareGroupInserted({}, a).inserted);
  // `a` a prefix of the longer stream: no ending of `a` to find again.
  std::vector<int64_t> longer = a;
  longer.push_back(a.back() + 1);
  EXPECT_FALSE(CompareGroupInserted(a, longer).inserted);
}

// Two groups of different sizes or shifts are not the same steady state.
TEST(EventStreamsTest, GroupsOfDifferentShiftsAreNotTheSame) {
  GroupInsert x{true, 10, 5, kPeriod}, y{true, 12, 5, kPeriod + 2};
  EXPECT_FALSE(SameGroupInserted(x, y));
  y.shift = kPeriod + 1;  // within the engine's rounding
  EXPECT_TRUE(SameGroupInserted(x, y));
  y.shift = kPeriod;
  EXPECT_TRUE(SameGroupInserted(x, y));
  y.events = 6;
  EXPECT_FALSE(SameGroupInserted(x, y));
  x.inserted = false;
  EXPECT_FALSE(SameGroupInserted(x, x));
}

}  // namespace
}  // namespace trainsim::step
