#include "sweep/distributed.h"

#include <algorithm>
#include <cstdlib>
#include <string>

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
    if (owns_ && !finalised) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Result<std::vector<std::string>> AllGather(const std::string& mine) override {
    // Lengths first (as 64-bit), then the bytes in chunks of at most 1 GiB per call so the
    // int counts of MPI-3 cannot overflow.
    long long len = static_cast<long long>(mine.size());
    std::vector<long long> lens(static_cast<size_t>(size_));
    if (MPI_Allgather(&len, 1, MPI_LONG_LONG, lens.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD) !=
        MPI_SUCCESS) {
      return Status::Internal("MPI_Allgather of result sizes failed");
    }
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
      if (MPI_Allgatherv(send, counts[size_t(rank_)], MPI_CHAR, recv.data(), counts.data(),
                         displs.data(), MPI_CHAR, MPI_COMM_WORLD) != MPI_SUCCESS) {
        return Status::Internal("MPI_Allgatherv of results failed");
      }
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
  int rank_ = 0, size_ = 1;
  bool owns_ = false;
};
#endif

}  // namespace

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
