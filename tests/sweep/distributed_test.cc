// AgreeOnStatus: every rank learns the first failure any rank met, so all stop at the same point
// (sweep/distributed.h). The other ranks are played by a communicator that answers AllGather
// with fixed bytes for them and this rank's own bytes in its slot.
#include "sweep/distributed.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace trainsim::sweep {
namespace {

class FixedGroup : public Communicator {
 public:
  FixedGroup(int rank, std::vector<Status> others) : rank_(rank), statuses_(std::move(others)) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(statuses_.size()); }
  Result<std::vector<std::string>> AllGather(const std::string& mine) override {
    ++exchanges;
    if (fail_exchange) return Status::Unavailable("rank 1 did not answer within 3 s");
    std::vector<std::string> all;
    for (int k = 0; k < size(); ++k) {
      const Status& s = statuses_[k];
      all.push_back(k == rank_ ? mine : s.ok() ? "" : static_cast<char>(s.code()) + s.message());
    }
    return all;
  }
  int exchanges = 0;
  bool fail_exchange = false;

 private:
  int rank_;
  std::vector<Status> statuses_;
};

TEST(AgreeOnStatusTest, AllOkIsOk) {
  FixedGroup group(0, {Status::Ok(), Status::Ok(), Status::Ok()});
  EXPECT_TRUE(AgreeOnStatus(&group, Status::Ok()).ok());
  EXPECT_EQ(group.exchanges, 1);
}

TEST(AgreeOnStatusTest, RankZeroLearnsAnotherRanksFailureWithItsRankAndCode) {
  FixedGroup group(0, {Status::Ok(), Status::Ok(), Status::NotFound("a.json: no such file")});
  Status s = AgreeOnStatus(&group, Status::Ok());
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_EQ(s.message(), "(rank 2) a.json: no such file");
}

TEST(AgreeOnStatusTest, TheLowestFailingRankWinsAndAFailingRankKeepsItsOwnMessage) {
  std::vector<Status> all = {Status::Ok(), Status::FailedPrecondition("does not fit"),
                             Status::InvalidArgument("bad")};
  FixedGroup rank2(2, all);
  Status s = AgreeOnStatus(&rank2, all[2]);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "(rank 1) does not fit");
  FixedGroup rank1(1, all);
  s = AgreeOnStatus(&rank1, all[1]);
  EXPECT_EQ(s.message(), "does not fit");
}

TEST(AgreeOnStatusTest, RankZerosOwnFailureHasNoPrefixAnywhere) {
  std::vector<Status> all = {Status::InvalidArgument("--objective: speed"), Status::Ok()};
  FixedGroup rank1(1, all);
  Status s = AgreeOnStatus(&rank1, Status::Ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "--objective: speed");
}

TEST(AgreeOnStatusTest, AFailedExchangeIsReturned) {
  FixedGroup group(0, {Status::Ok(), Status::Ok()});
  group.fail_exchange = true;
  EXPECT_EQ(AgreeOnStatus(&group, Status::Ok()).code(), Status::Code::kUnavailable);
}

TEST(AgreeOnStatusTest, AGroupOfOneNeedsNoExchange) {
  LocalCommunicator one;
  EXPECT_EQ(AgreeOnStatus(&one, Status::NotFound("x")).code(), Status::Code::kNotFound);
  EXPECT_TRUE(AgreeOnStatus(&one, Status::Ok()).ok());
}

}  // namespace
}  // namespace trainsim::sweep
