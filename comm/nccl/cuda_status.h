// CUDA, NCCL and cuBLAS return codes as trainsim Status values, for the runner's GPU code.
//
// Every failure becomes Status::Unavailable with the call that failed and the library's own
// message, so that the runner prints one line such as
//   "cudaMalloc (send buffer): out of memory (cudaErrorMemoryAllocation)".
// ncclInProgress is success here: with non-blocking communicators it means "enqueued, poll
// ncclCommGetAsyncError", which the caller does.
#ifndef TRAINSIM_COMM_NCCL_CUDA_STATUS_H_
#define TRAINSIM_COMM_NCCL_CUDA_STATUS_H_

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "sim/status.h"

namespace trainsim::comm::nccl {

inline Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Status::Unavailable(std::string(what) + ": " + cudaGetErrorString(e) + " (" +
                             cudaGetErrorName(e) + ")");
}

inline Status NcclStatus(ncclResult_t r, const char* what) {
  if (r == ncclSuccess || r == ncclInProgress) return Status::Ok();
  return Status::Unavailable(std::string(what) + ": NCCL error " + std::to_string(r) + ", " +
                             ncclGetErrorString(r));
}

inline Status CublasStatus(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status::Unavailable(std::string(what) + ": cuBLAS error " +
                             std::to_string(static_cast<int>(s)) + ", " +
                             cublasLtGetStatusString(s));
}

}  // namespace trainsim::comm::nccl

#endif  // TRAINSIM_COMM_NCCL_CUDA_STATUS_H_
