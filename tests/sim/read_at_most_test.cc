#include "sim/read_at_most.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <string>

namespace trainsim {
namespace {

// A stream of n bytes whose byte i is 'a' + i % 26, to see that chunks join in order.
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char('a' + i % 26);
  return s;
}

TEST(ReadAtMostTest, ReadsAWholeStreamUpToTheLimitInOrder) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{65537},
                   size_t{200'000}, size_t{1} << 20}) {
    std::istringstream in(Pattern(n));
    const BoundedRead r = ReadAtMost(in, size_t{1} << 20);
    EXPECT_FALSE(r.failed) << n;
    EXPECT_FALSE(r.too_large) << n;
    EXPECT_EQ(r.body, Pattern(n)) << n;
  }
}

TEST(ReadAtMostTest, StopsOneBytePastTheLimit) {
  for (size_t max : {size_t{0}, size_t{10}, size_t{65536}, size_t{100'000}}) {
    std::istringstream in(Pattern(max + 70'000));
    const BoundedRead r = ReadAtMost(in, max);
    EXPECT_TRUE(r.too_large) << max;
    EXPECT_FALSE(r.failed) << max;
    EXPECT_EQ(r.body, Pattern(max + 1)) << max;
    // Nothing past that byte was consumed.
    EXPECT_EQ(static_cast<size_t>(in.tellg()), max + 1) << max;
  }
}

// A small file costs its size, not the limit's: a 16 MiB limit once meant a 16 MiB zeroed
// buffer (and ~50 ms of page faults) for every scenario of a few KiB.
TEST(ReadAtMostTest, ASmallStreamDoesNotAllocateTheLimit) {
  std::istringstream in(Pattern(3000));
  const BoundedRead r = ReadAtMost(in, size_t{16} << 20);
  EXPECT_EQ(r.body.size(), 3000u);
  EXPECT_LE(r.body.capacity(), size_t{256} << 10);
}

// A stream whose source fails after `good` bytes (a disk error part-way through a file).
class FailingBuf : public std::streambuf {
 public:
  explicit FailingBuf(size_t good) : left_(good) {}

 protected:
  int_type underflow() override {
    if (left_ == 0) throw std::runtime_error("read error");
    const size_t n = std::min(left_, sizeof buf_);
    std::fill(buf_, buf_ + n, 'x');
    left_ -= n;
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(buf_[0]);
  }

 private:
  size_t left_;
  char buf_[4096];
};

// Reported as failed, the body a prefix of what the source gave (iostreams may drop the chunk
// that failed: libstdc++ counts nothing of a read its buffer threw in).
TEST(ReadAtMostTest, AStreamFailingAfterSeveralChunksIsReported) {
  FailingBuf buf(100'000);
  std::istream in(&buf);
  const BoundedRead r = ReadAtMost(in, size_t{1} << 20);
  EXPECT_TRUE(r.failed);
  EXPECT_FALSE(r.too_large);
  EXPECT_GE(r.body.size(), size_t{64} << 10);  // the first chunk, read whole
  EXPECT_LE(r.body.size(), 100'000u);
  EXPECT_EQ(r.body.find_first_not_of('x'), std::string::npos);
}

// The largest limit a size_t holds: the read past it must not wrap to a read of nothing, again
// and again.
TEST(ReadAtMostTest, TheLargestLimitReadsTheWholeStream) {
  std::istringstream in(Pattern(70'000));
  const BoundedRead r = ReadAtMost(in, SIZE_MAX);
  EXPECT_FALSE(r.too_large);
  EXPECT_EQ(r.body, Pattern(70'000));
}

TEST(ReadAtMostTest, AFailedStreamIsReported) {
  std::istringstream in("abc");
  in.setstate(std::ios::badbit);
  const BoundedRead r = ReadAtMost(in, 100);
  EXPECT_TRUE(r.failed);
  EXPECT_FALSE(r.too_large);
}

}  // namespace
}  // namespace trainsim
