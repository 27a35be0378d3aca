#include "sim/time.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainsim::sim {
namespace {

TEST(TimeTest, ParsesHumanDurations) {
  EXPECT_EQ(ParseDuration("90s").value(), Time::Seconds(90));
  EXPECT_EQ(ParseDuration("16h").value(), Time::Hours(16));
  EXPECT_EQ(ParseDuration("2d").value(), Time::Days(2));
  EXPECT_EQ(ParseDuration("1h30m").value(), Time::Minutes(90));
  EXPECT_EQ(ParseDuration("1.5h").value(), Time::Minutes(90));
  EXPECT_EQ(ParseDuration("250ms").value(), Time::Millis(250));
  EXPECT_EQ(ParseDuration("10us").value(), Time::Micros(10));
  EXPECT_EQ(ParseDuration("5ns").value(), Time::Nanos(5));
  EXPECT_EQ(ParseDuration("1w").value(), Time::Days(7));
  EXPECT_EQ(ParseDuration("0").value(), Time::Zero());
  EXPECT_EQ(ParseDuration("1m30s").value(), Time::Seconds(90));
  EXPECT_EQ(ParseDuration("2h0m").value(), Time::Hours(2));
}

TEST(TimeTest, RejectsMalformedDurationsWithReason) {
  for (const char* bad :
       {"", "h", "10", "10x", "-5s", "1.2.3s", "30m1h", "1h1h", "1 h", "nan", "inf", "1e3s"}) {
    Result<Time> r = ParseDuration(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("duration"), std::string::npos) << bad;
  }
  EXPECT_NE(ParseDuration("-5s").status().message().find("negative"), std::string::npos);
}

TEST(TimeTest, OverflowingDurationIsOutOfRangeNotWrapped) {
  // int64 nanoseconds hold 106,751 days; one more day must be rejected, not wrapped.
  EXPECT_TRUE(ParseDuration("106751d").ok());
  Result<Time> r = ParseDuration("106752d");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kOutOfRange);
  EXPECT_FALSE(ParseDuration("99999999999999999999s").ok());
  EXPECT_FALSE(Time::CheckedAdd(Time::Max(), Time::Nanos(1)).has_value());
  EXPECT_FALSE(Time::CheckedMul(Time::Days(100000), 2).has_value());
  EXPECT_FALSE(Time::FromSecondsChecked(1e19).has_value());
  EXPECT_FALSE(Time::FromSecondsChecked(std::nan("")).has_value());
}

TEST(TimeTest, FormatRoundTripsThroughParse) {
  for (Time t : {Time::Zero(), Time::Nanos(7), Time::Micros(12), Time::Millis(250),
                 Time::Seconds(90), Time::Minutes(90), Time::Days(2), Time::Nanos(93784500000000),
                 Time::Days(365) + Time::Nanos(1)}) {
    Result<Time> back = ParseDuration(FormatDuration(t));
    ASSERT_TRUE(back.ok()) << FormatDuration(t);
    EXPECT_EQ(back.value(), t) << FormatDuration(t);
  }
  EXPECT_EQ(FormatDuration(Time::Minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(Time::Millis(250)), "250ms");
  EXPECT_EQ(FormatDuration(Time::Days(2)), "2d");
}

TEST(TimeTest, SecondsConversionRoundsToNearestNanosecond) {
  EXPECT_EQ(Time::FromSeconds(1.5).nanos(), 1500000000);
  EXPECT_EQ(Time::FromSeconds(1e-9 * 0.6).nanos(), 1);
  EXPECT_DOUBLE_EQ(Time::Hours(1).seconds(), 3600.0);
}

}  // namespace
}  // namespace trainsim::sim
