#include "comm/message_size.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainsim::comm {
namespace {

TEST(MessageSizeTest, UnitsArePowersOfTenOrTwoAsNamed) {
  EXPECT_EQ(*ParseMessageSize("8"), 8u);
  EXPECT_EQ(*ParseMessageSize("8B"), 8u);
  EXPECT_EQ(*ParseMessageSize("64KB"), 64'000u);
  EXPECT_EQ(*ParseMessageSize("64KiB"), 65'536u);
  EXPECT_EQ(*ParseMessageSize("1MB"), 1'000'000u);
  EXPECT_EQ(*ParseMessageSize("1MiB"), 1u << 20);
  EXPECT_EQ(*ParseMessageSize("8GiB"), uint64_t{8} << 30);
  EXPECT_EQ(*ParseMessageSize("2GB"), 2'000'000'000u);
}

TEST(MessageSizeTest, RejectsZeroBadUnitsAndJunkSayingWhatIsValid) {
  for (const char* bad : {"0", "0B", "8G", "8Gi", "8gib", "", "GiB", "1.5GiB", "-8", "8 B",
                          "99999999999999999999B", "8TiBB"}) {
    Result<uint64_t> r = ParseMessageSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("KiB"), std::string::npos) << bad;
  }
  EXPECT_NE(ParseMessageSize("0B").status().message().find("> 0"), std::string::npos);
}

TEST(MessageSizeTest, RangeDoublesLikeNcclTests) {
  EXPECT_EQ(*ParseSizeRange("8B:64B"), (std::vector<uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(*ParseSizeRange("8B:100B"), (std::vector<uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(*ParseSizeRange("1KiB:64KiB", 4), (std::vector<uint64_t>{1024, 4096, 16384, 65536}));
  EXPECT_EQ(ParseSizeRange("8B:8GiB")->size(), 31u);  // 2^3 … 2^33
  EXPECT_EQ(*ParseSizeRange("1MiB"), (std::vector<uint64_t>{1u << 20}));
  EXPECT_FALSE(ParseSizeRange("8GiB:8B").ok());
  EXPECT_FALSE(ParseSizeRange("8B:8GiB", 1).ok());
  EXPECT_FALSE(ParseSizeRange("8B:").ok());
}

TEST(MessageSizeTest, FormatsExactBinarySizes) {
  EXPECT_EQ(FormatMessageSize(8), "8B");
  EXPECT_EQ(FormatMessageSize(65536), "64KiB");
  EXPECT_EQ(FormatMessageSize(uint64_t{8} << 30), "8GiB");
  EXPECT_EQ(FormatMessageSize(1000), "1000B");
}

}  // namespace
}  // namespace trainsim::comm
