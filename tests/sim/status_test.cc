// sim/status.h: Status::FromCode, for an error whose code travelled apart from its Status (a
// scenario FieldError, a byte from another MPI rank).
#include "sim/status.h"

#include <gtest/gtest.h>

namespace trainsim {
namespace {

TEST(StatusTest, FromCodeKeepsEveryErrorCodeAndMakesAnythingElseInvalidArgument) {
  using C = Status::Code;
  for (C code : {C::kInvalidArgument, C::kNotFound, C::kOutOfRange, C::kFailedPrecondition,
                 C::kUnavailable, C::kInternal}) {
    const Status s = Status::FromCode(code, "why");
    EXPECT_EQ(s.code(), code);
    EXPECT_EQ(s.message(), "why");
  }
  // A message is an error: kOk, and a byte that is no Code, become kInvalidArgument.
  EXPECT_EQ(Status::FromCode(C::kOk, "why").code(), C::kInvalidArgument);
  EXPECT_FALSE(Status::FromCode(C::kOk, "why").ok());
  EXPECT_EQ(Status::FromCode(static_cast<C>(100), "why").code(), C::kInvalidArgument);
}

}  // namespace
}  // namespace trainsim
