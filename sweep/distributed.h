// sweep/distributed.h — the process group a sweep runs on: one process, or MPI ranks.
//
// What it is: a tiny communicator with the one collective the sweep needs, an all-gather of
// byte strings. LocalCommunicator is a group of one. MakeCommunicator() initialises MPI only when
// trainsim was built with MPI (TRAINSIM_HAVE_MPI) and the process was launched by mpirun
// (OMPI_COMM_WORLD_SIZE or PMI_SIZE in the environment), so the plain binary never touches MPI;
// otherwise it returns a LocalCommunicator. The MPI communicator calls MPI_Finalize when
// destroyed.
//
// What it promises: AllGather returns every rank's bytes in rank order on every rank, so code
// that orders gathered results by a global index gives byte-identical output whatever the number
// of ranks. With SetTimeout(s > 0) a rank waits at most s seconds in one AllGather for the
// others (a rank that was stopped or hangs); it then returns kUnavailable and the communicator
// is broken: it does not call MPI_Finalize (which would wait for the lost rank too), and
// mpirun ends the job when this rank exits.
#ifndef TRAINSIM_SWEEP_DISTRIBUTED_H_
#define TRAINSIM_SWEEP_DISTRIBUTED_H_

#include <memory>
#include <string>
#include <vector>

#include "sim/status.h"

namespace trainsim::sweep {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Collective: every rank calls it with its bytes; returns all ranks' bytes, index = rank.
  virtual Result<std::vector<std::string>> AllGather(const std::string& mine) = 0;
  // Bounds the wait of each later AllGather; 0 (the default) waits for ever.
  virtual void SetTimeout(double seconds) { (void)seconds; }
};

class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Result<std::vector<std::string>> AllGather(const std::string& mine) override {
    return std::vector<std::string>{mine};
  }
};

// Collective: every rank passes what it met preparing its share (loading the scenario, opening
// an output); every rank gets back OK when all were OK, else the failure of the lowest failing
// rank, its message prefixed "(rank k) " when k is not 0. So a problem only one rank meets (a
// file missing on its node) stops every rank at the same point — none is left waiting in an
// exchange, none in MPI_Finalize — and rank 0 can say it. An exchange that fails (a timeout)
// is returned as is.
Status AgreeOnStatus(Communicator* comm, const Status& mine);

// True when the environment says mpirun (Open MPI or a PMI launcher) started this process.
bool LaunchedUnderMpi();
// This process's rank as the launcher's environment gives it (OMPI_COMM_WORLD_RANK, PMI_RANK,
// PMIX_RANK), readable before MPI is initialised; 0 when not launched by mpirun.
int LaunchRank();
// True when this build has MPI support.
bool BuiltWithMpi();

// The MPI world when built with MPI and launched under mpirun, else a LocalCommunicator.
// Errors: launched under mpirun with more than one rank but built without MPI (every rank would
// repeat the whole sweep) — Unavailable, naming the fix.
Result<std::unique_ptr<Communicator>> MakeCommunicator();

}  // namespace trainsim::sweep

#endif  // TRAINSIM_SWEEP_DISTRIBUTED_H_
