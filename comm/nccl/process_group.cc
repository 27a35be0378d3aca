#include "comm/nccl/process_group.h"

#include <cstdlib>
#include <string>

#ifdef TRAINSIM_NCCL_WITH_MPI
#include <mpi.h>
#endif

namespace trainsim::comm::nccl {
namespace {

// Number of processes the launcher started, from its environment; 0 when not under a launcher.
int LauncherSize() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return std::getenv("PMIX_RANK") ? 1 : 0;
}

#ifdef TRAINSIM_NCCL_WITH_MPI
Status MpiStatus(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return Status::Unavailable(std::string("MPI error in ") + what + ": " + std::string(msg, len));
}
#endif

}  // namespace

Result<ProcessGroup> ProcessGroup::Init(int* argc, char*** argv) {
  ProcessGroup g;
  int launched = LauncherSize();
#ifdef TRAINSIM_NCCL_WITH_MPI
  if (launched > 0) {
    TRAINSIM_RETURN_IF_ERROR(MpiStatus(MPI_Init(argc, argv), "MPI_Init"));
    // Errors come back as codes, so they become messages instead of an MPI-side abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    g.mpi_ = true;
    TRAINSIM_RETURN_IF_ERROR(MpiStatus(MPI_Comm_rank(MPI_COMM_WORLD, &g.rank_), "MPI_Comm_rank"));
    TRAINSIM_RETURN_IF_ERROR(MpiStatus(MPI_Comm_size(MPI_COMM_WORLD, &g.size_), "MPI_Comm_size"));
    MPI_Comm node;
    TRAINSIM_RETURN_IF_ERROR(MpiStatus(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g.rank_, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type"));
    MPI_Comm_rank(node, &g.local_rank_);
    MPI_Comm_free(&node);
    int leader = g.local_rank_ == 0 ? 1 : 0;
    TRAINSIM_RETURN_IF_ERROR(MpiStatus(
        MPI_Allreduce(&leader, &g.nodes_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce"));
  }
#else
  (void)argc;
  (void)argv;
  if (launched > 1) {
    return Status::Unavailable(
        "started by an MPI launcher with " + std::to_string(launched) +
        " processes, but this runner was built without MPI; rebuild with MPI "
        "(-DTRAINSIM_NCCL_MPI=ON) or run one process, which drives every visible GPU");
  }
#endif
  return g;
}

Status ProcessGroup::Broadcast(void* data, size_t bytes) const {
#ifdef TRAINSIM_NCCL_WITH_MPI
  if (mpi_) {
    return MpiStatus(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD),
                     "MPI_Bcast");
  }
#endif
  (void)data;
  (void)bytes;
  return Status::Ok();
}

Result<double> ProcessGroup::Max(double v) const {
#ifdef TRAINSIM_NCCL_WITH_MPI
  if (mpi_) {
    double out = v;
    TRAINSIM_RETURN_IF_ERROR(MpiStatus(
        MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce"));
    return out;
  }
#endif
  return v;
}

Result<long long> ProcessGroup::Sum(long long v) const {
#ifdef TRAINSIM_NCCL_WITH_MPI
  if (mpi_) {
    long long out = v;
    TRAINSIM_RETURN_IF_ERROR(MpiStatus(
        MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce"));
    return out;
  }
#endif
  return v;
}

void ProcessGroup::Abort(int code) const {
#ifdef TRAINSIM_NCCL_WITH_MPI
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  (void)code;
}

void ProcessGroup::Finalize() const {
#ifdef TRAINSIM_NCCL_WITH_MPI
  if (mpi_) MPI_Finalize();
#endif
}

}  // namespace trainsim::comm::nccl
