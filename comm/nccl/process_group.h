// How the runner's processes are arranged: one process driving every visible GPU, or one
// process per GPU under mpirun (when built with MPI), exchanging the NCCL unique id over MPI.
//
// Promises: without MPI (or when not launched by an MPI launcher) every call is a local no-op
// and the group has one process. Under MPI, collective calls are made by every process in the
// same order. Launched by mpirun with several processes but built without MPI: Init fails
// with a message rather than running N independent single-process calibrations.
#ifndef TRAINSIM_COMM_NCCL_PROCESS_GROUP_H_
#define TRAINSIM_COMM_NCCL_PROCESS_GROUP_H_

#include <cstddef>
#include <string>

#include "sim/status.h"

namespace trainsim::comm::nccl {

class ProcessGroup {
 public:
  // Initialises MPI when the process was started by an MPI launcher (OMPI_COMM_WORLD_SIZE,
  // PMI_SIZE or PMIX_RANK set) and the runner was built with MPI.
  static Result<ProcessGroup> Init(int* argc, char*** argv);

  bool mpi() const { return mpi_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  // Machines in the group (processes that share memory count as one); 1 without MPI.
  int nodes() const { return nodes_; }
  bool is_root() const { return rank_ == 0; }

  // Root's bytes to every process.
  Status Broadcast(void* data, size_t bytes) const;
  // Largest value over the processes.
  Result<double> Max(double v) const;
  // Sum over the processes.
  Result<long long> Sum(long long v) const;
  // All processes exit with this code (MPI_Abort under MPI; otherwise returns).
  void Abort(int code) const;
  void Finalize() const;

 private:
  bool mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, nodes_ = 1;
};

}  // namespace trainsim::comm::nccl

#endif  // TRAINSIM_COMM_NCCL_PROCESS_GROUP_H_
