#include "checkpoint/policy.h"

#include <gtest/gtest.h>

namespace trainsim::checkpoint {
namespace {

using sim::Time;

TEST(CheckpointIntervalTest, ParsesAndRejects) {
  EXPECT_EQ(ParseCheckpointInterval("steps:500")->steps, 500);
  EXPECT_EQ(ParseCheckpointInterval("auto")->kind, CheckpointInterval::Kind::kAuto);
  EXPECT_EQ(ParseCheckpointInterval("30m")->every, Time::Minutes(30));
  EXPECT_FALSE(ParseCheckpointInterval("0").ok());
  EXPECT_FALSE(ParseCheckpointInterval("steps:0").ok());
  EXPECT_FALSE(ParseCheckpointInterval("steps:-3").ok());
  EXPECT_FALSE(ParseCheckpointInterval("sometimes").ok());
}

TEST(CheckpointIntervalTest, Forms) {
  auto steps = ParseCheckpointInterval("steps:500");
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->kind, CheckpointInterval::Kind::kSteps);
  EXPECT_EQ(steps->steps, 500);
  EXPECT_EQ(ParseCheckpointInterval("auto")->kind, CheckpointInterval::Kind::kAuto);
  EXPECT_EQ(ParseCheckpointInterval("1h30m")->every, Time::Minutes(90));
  EXPECT_FALSE(ParseCheckpointInterval("0").ok());
  EXPECT_FALSE(ParseCheckpointInterval("steps:").ok());
  EXPECT_FALSE(ParseCheckpointInterval("steps:1x").ok());
}

TEST(CheckpointIntervalTest, ToStringNamesEveryKind) {
  EXPECT_EQ(ParseCheckpointInterval("steps:500")->ToString(), "steps:500");
  EXPECT_EQ(ParseCheckpointInterval("auto")->ToString(), "auto");
  EXPECT_EQ(ParseCheckpointInterval("90m")->ToString(), "1h30m");
  CheckpointInterval never;
  never.kind = CheckpointInterval::Kind::kNever;
  EXPECT_EQ(never.ToString(), "never");
}

}  // namespace
}  // namespace trainsim::checkpoint
