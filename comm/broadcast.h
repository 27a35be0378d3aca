// comm broadcast — NCCL's ring broadcast: a pipelined chain from the root around the ring.
//
// C channels (one per NIC rail across nodes, as for rings), each carrying 1/C of the data along
// its ring order rotated to start at the root (gpus[0]); the data is cut into P chunks of
// 512 KiB (NCCL's Simple step size: 4 MiB buffer / 8 steps), capped by the expansion's flow
// budget; chunk i crosses hop j at wave i + j, so the chain finishes after P + n − 2 waves.
//
// Closed form: T = base + Σ over the chain's hops of NCCL's Ring hop latency + Σ over the
// P + n − 2 waves of c / (f · r_w), r_w the most loaded link's share in wave w (fewer hops are
// busy while the pipeline fills and drains). nccl-tests busbw = algbw for broadcast.
// Expansion: the same waves as flows, the fill and drain each closed into one segment
// (comm/schedule.h, "Closing": the same time on an idle network).
#ifndef TRAINSIM_COMM_BROADCAST_H_
#define TRAINSIM_COMM_BROADCAST_H_

#include <cstdint>
#include <vector>

#include "comm/schedule.h"
#include "comm/topology.h"

namespace trainsim::comm {

// REQUIRES: gpus distinct, size >= 2, root = gpus[0]; bytes > 0.
TransferSchedule BuildBroadcastSchedule(const Topology& topology, const std::vector<int>& gpus,
                                        uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_BROADCAST_H_
