// comm PAT — NCCL 2.23+'s Parallel Aggregated Trees all-gather and reduce-scatter.
//
// NCCL enables PAT only with one GPU per node (ncclPatEnable: nNodes == nRanks) and the Simple
// protocol. Data moves in ⌈log2 n⌉ steps at doubling distances (Bruck's pattern, which PAT
// aggregates): in step k every rank sends min(2^k, n − 2^k) blocks of S/n to the rank 2^k away,
// n − 1 blocks in all, as the ring moves. What PAT saves is latency: tuning.cc prices it at
// 8 µs + ⌊log2 n⌋ · (network hop / 3.5) + n · 2.8 µs, against the ring's n − 1 network hops;
// its bus bandwidth is 0.75 of the graph's (tuning.cc "busBw *= .75"), the schedule's efficiency.
// Closed form: T = 8 µs + latency + Σ_k min(2^k, n − 2^k)·⌈S/n⌉ / (0.75 · r_k).
// Errors (FailedPrecondition): two group GPUs on one node; op not reduce-scatter or all-gather.
#ifndef TRAINSIM_COMM_PAT_H_
#define TRAINSIM_COMM_PAT_H_

#include <cstdint>
#include <vector>

#include "comm/collective.h"
#include "comm/schedule.h"
#include "comm/topology.h"
#include "sim/status.h"

namespace trainsim::comm {

Result<TransferSchedule> BuildPatSchedule(const Topology& topology, Op op,
                                          const std::vector<int>& gpus, uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_PAT_H_
