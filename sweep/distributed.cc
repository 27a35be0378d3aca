#include "sweep/distributed.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#ifdef TRAINSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace trainsim::sweep {
namespace {

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

#ifdef TRAINSIM_HAVE_MPI
class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      MPI_Init(nullptr, nullptr);
      owns_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (owns_ && !finalised && !broken_) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void SetTimeout(double seconds) override { timeout_s_ = seconds; }

  Result<std::vector<std::string>> AllGather(const std::string& mine) override {
    // Lengths first (as 64-bit), then the bytes in chunks of at most 1 GiB per call so the
    // int counts of MPI-3 cannot overflow.
    long long len = static_cast<long long>(mine.size());
    std::vector<long long> lens(static_cast<size_t>(size_));
    if (broken_) return Status::Unavailable("the MPI ranks stopped answering earlier");
    MPI_Request req;
    if (MPI_Iallgather(&len, 1, MPI_LONG_LONG, lens.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD,
                       &req) != MPI_SUCCESS) {
      return Status::Internal("MPI_Allgather of result sizes failed");
    }
    TRAINSIM_RETURN_IF_ERROR(Wait(&req, "the result sizes"));
    std::vector<std::string> out(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) out[size_t(r)].resize(size_t(lens[size_t(r)]));
    constexpr long long kChunk = 1LL << 30;
    long long max_len = 0;
    for (long long l : lens) max_len = std::max(max_len, l);
    for (long long off = 0; off < max_len; off += kChunk) {
      std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        const long long rem = std::max(0LL, lens[size_t(r)] - off);
        counts[size_t(r)] = int(std::min(rem, kChunk));
        displs[size_t(r)] = total;
        total += counts[size_t(r)];
      }
      std::string recv(size_t(total), '\0');
      const char* send = mine.data() + std::min<long long>(off, len);
      if (MPI_Iallgatherv(send, counts[size_t(rank_)], MPI_CHAR, recv.data(), counts.data(),
                          displs.data(), MPI_CHAR, MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
        return Status::Internal("MPI_Allgatherv of results failed");
      }
      TRAINSIM_RETURN_IF_ERROR(Wait(&req, "the results"));
      for (int r = 0; r < size_; ++r) {
        if (counts[size_t(r)] > 0) {
          out[size_t(r)].replace(size_t(off), size_t(counts[size_t(r)]), recv,
                                 size_t(displs[size_t(r)]), size_t(counts[size_t(r)]));
        }
      }
    }
    return out;
  }

 private:
  // Waits for `req`; with a timeout, polls it until it completes or the timeout passes. The poll
  // interval grows from 1 µs to 10 ms: a prompt answer costs nothing, a long wait (ranks
  // finishing their shares at different times) costs about 1% of a core.
  Status Wait(MPI_Request* req, const char* what) {
    using Clock = std::chrono::steady_clock;
    if (timeout_s_ <= 0) {  // no timeout: MPI's own wait, as fast as the library makes it
      if (MPI_Wait(req, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        return Status::Internal(std::string("MPI all-gather of ") + what + " failed");
      }
      return Status::Ok();
    }
    const Clock::time_point start = Clock::now();
    auto pause = std::chrono::microseconds(1);
    for (;;) {
      int done = 0;
      if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        return Status::Internal(std::string("MPI all-gather of ") + what + " failed");
      }
      if (done) return Status::Ok();
      if (std::chrono::duration<double>(Clock::now() - start).count() > timeout_s_) {
        broken_ = true;
        return Status::Unavailable("waited " + FormatSeconds(timeout_s_) +
                                   " s (--mpi-timeout) for the other ranks to send " + what +
                                   "; a rank stopped or hangs, so the sweep is abandoned");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
    }
  }
  static std::string FormatSeconds(double s) {
    std::string t = std::to_string(s);
    while (!t.empty() && t.back() == '0') t.pop_back();
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t;
  }

  int rank_ = 0, size_ = 1;
  bool owns_ = false;
  bool broken_ = false;
  double timeout_s_ = 0;
};
#endif

}  // namespace

Status AgreeOnStatus(Communicator* comm, const Status& mine) {
  if (comm->size() == 1) return mine;
  // One byte of code, then the message; "" for OK.
  std::string bytes;
  if (!mine.ok()) bytes = static_cast<char>(mine.code()) + mine.message();
  Result<std::vector<std::string>> all = comm->AllGather(bytes);
  if (!all.ok()) return all.status();
  for (size_t k = 0; k < all->size(); ++k) {
    const std::string& b = (*all)[k];
    if (b.empty()) continue;
    if (static_cast<int>(k) == comm->rank()) return mine;
    const std::string message = (k == 0 ? "" : "(rank " + std::to_string(k) + ") ") + b.substr(1);
    return Status::FromCode(static_cast<Status::Code>(b[0]), message);
  }
  return Status::Ok();
}

int LaunchRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return EnvInt(name);
  }
  return 0;
}

bool LaunchedUnderMpi() { return EnvInt("OMPI_COMM_WORLD_SIZE") > 0 || EnvInt("PMI_SIZE") > 0; }

bool BuiltWithMpi() {
#ifdef TRAINSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<Communicator>> MakeCommunicator() {
  if (LaunchedUnderMpi()) {
#ifdef TRAINSIM_HAVE_MPI
    return std::unique_ptr<Communicator>(std::make_unique<MpiCommunicator>());
#else
    const int n = std::max(EnvInt("OMPI_COMM_WORLD_SIZE"), EnvInt("PMI_SIZE"));
    if (n > 1) {
      return Status::Unavailable(
          "launched under mpirun with " + std::to_string(n) +
          " ranks, but this trainsim was built without MPI (install libopenmpi-dev and "
          "reconfigure), so every rank would run the whole sweep; run it without mpirun");
    }
#endif
  }
  return std::unique_ptr<Communicator>(std::make_unique<LocalCommunicator>());
}

}  // namespace trainsim::sweep
