#include "sim/time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
  // Letters that are no unit are named ("1H" was said to have "no unit after "1"").
  EXPECT_NE(ParseDuration("1H").status().message().find("unknown unit \"H\" after \"1\""),
            std::string::npos)
      << ParseDuration("1H").status().message();
  EXPECT_NE(ParseDuration("2hrs").status().message().find("unknown unit \"hrs\""),
            std::string::npos)
      << ParseDuration("2hrs").status().message();
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
  // The one checked double→int64 conversion: 2^63 ns does not fit, 2^62 does; ±inf never.
  EXPECT_FALSE(Time::FromNanosChecked(9223372036854775808.0).has_value());
  EXPECT_EQ(Time::FromNanosChecked(4611686018427387904.0), Time::Nanos(int64_t{1} << 62));
  EXPECT_FALSE(Time::FromNanosChecked(-std::numeric_limits<double>::infinity()).has_value());
  EXPECT_EQ(Time::FromNanosChecked(2.5), Time::Nanos(3));  // rounds half away from zero
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
  // A unit between two written ones is written as 0: 3 h and 39 s is not "3h39s" (3 h 39 min
  // to the eye), nor a day and 19 minutes "1d19m".
  EXPECT_EQ(FormatDuration(Time::Hours(3) + Time::Millis(39026)), "3h0m39.026s");
  EXPECT_EQ(FormatDuration(Time::Days(1) + Time::Minutes(19)), "1d0h19m");
  EXPECT_EQ(FormatDuration(Time::Days(1) + Time::Seconds(4)), "1d0h0m4s");
  EXPECT_EQ(FormatDuration(Time::Hours(26)), "1d2h");
}

TEST(TimeTest, SecondsConversionRoundsToNearestNanosecond) {
  EXPECT_EQ(Time::FromSeconds(1.5).nanos(), 1500000000);
  EXPECT_EQ(Time::FromSeconds(1e-9 * 0.6).nanos(), 1);
  EXPECT_DOUBLE_EQ(Time::Hours(1).seconds(), 3600.0);
}

// The inline conversion must round exactly as std::round on s · 1e9 (halves away from zero),
// including the doubles just below a half, where adding 0.5 and truncating goes wrong.
TEST(TimeTest, SecondsConversionRoundsHalvesAwayFromZeroAsStdRound) {
  const double cases_ns[] = {0.5,
                             -0.5,
                             1.5,
                             -1.5,
                             2.5,
                             -2.5,
                             0.49999999999999994,
                             -0.49999999999999994,
                             4503599627370495.5,
                             -4503599627370495.5,
                             9007199254740993.0,
                             1e18,
                             -1e18,
                             4.6e18,
                             -4.6e18,
                             0.0,
                             -0.0};
  for (double ns : cases_ns) {
    const double s = ns / 1e9;
    EXPECT_EQ(Time::FromSeconds(s).nanos(), static_cast<int64_t>(std::round(s * 1e9))) << ns;
  }
  // A sweep of ordinary durations, a few ulps either side of every half nanosecond.
  for (int64_t k = -2000; k <= 2000; ++k) {
    double s = (double(k) + 0.5) * 1e-9;
    for (int ulp = 0; ulp < 4; ++ulp) {
      EXPECT_EQ(Time::FromSeconds(s).nanos(), static_cast<int64_t>(std::round(s * 1e9))) << s;
      s = std::nextafter(s, 1.0);
    }
  }
  // Past ±2^62 ns the checked path answers, to the same rounding.
  EXPECT_EQ(Time::FromSeconds(6e9).nanos(), int64_t{6000000000000000000});
}

TEST(TimeTest, FormatHandlesNegativeAndExtremeValues) {
  EXPECT_EQ(FormatDuration(Time::Zero() - Time::Seconds(90)), "-1m30s");
  EXPECT_EQ(FormatDuration(Time::Zero() - Time::Micros(5)), "-5us");
  // INT64_MAX ns = 9223372036.854775807 s = 106751 d 23 h 47 m 16.854775807 s.
  EXPECT_EQ(FormatDuration(Time::Max()), "106751d23h47m16.854775807s");
  // INT64_MIN has no positive counterpart in int64; it must still format, one ns further.
  EXPECT_EQ(FormatDuration(Time::Nanos(std::numeric_limits<int64_t>::min())),
            "-106751d23h47m16.854775808s");
}

TEST(TimeTest, FormatSecondsHumanPicksUnitByMagnitude) {
  EXPECT_EQ(FormatSecondsHuman(0), "0 s");
  EXPECT_EQ(FormatSecondsHuman(812e-6), "812.0 us");
  EXPECT_EQ(FormatSecondsHuman(4.25e-3), "4.25 ms");
  EXPECT_EQ(FormatSecondsHuman(1.43), "1.430 s");
  EXPECT_EQ(FormatSecondsHuman(150), "2.50 min");   // 150 s / 60
  EXPECT_EQ(FormatSecondsHuman(7560), "2.10 h");    // 7560 s / 3600
  EXPECT_EQ(FormatSecondsHuman(302400), "3.50 d");  // 3.5 * 86400 s
  EXPECT_EQ(FormatSecondsHuman(-1.5), "-1.500 s");
}

TEST(TimeTest, ArithmeticAndComparisonAreExactIntegers) {
  // 0.1 s + 0.2 s is exactly 0.3 s in integer nanoseconds (it is not in double seconds).
  EXPECT_EQ(Time::Millis(100) + Time::Millis(200), Time::Millis(300));
  EXPECT_EQ(Time::Hours(16) / Time::Minutes(30), 32);
  EXPECT_EQ(Time::Seconds(3) * 4, Time::Seconds(12));
  EXPECT_EQ(Time::CheckedAdd(Time::Max(), Time::Zero()), Time::Max());
  EXPECT_EQ(Time::CheckedMul(Time::Days(50000), 2), Time::Days(100000));
  EXPECT_LT(Time::Nanos(1), Time::Micros(1));
}

}  // namespace
}  // namespace trainsim::sim
