// comm direct collectives — all-to-all and send/recv: every transfer at once, routed by the
// topology, sharing links max-min fairly.
//
// All-to-all: each rank sends ⌈S/n⌉ to each of the n−1 others, all concurrently (NCCL issues
// the n−1 sends and receives in one group). Send/recv: one transfer of S from gpus[0] to gpus[1].
// Closed form: T = base + max hop latency + ⌈S/n⌉ / (f · r), r the smallest
// max-min share (for all-to-all across nodes: the NIC, or the leaf up-links when the fat tree
// is oversubscribed). Expansion: one wave of flows. NCCL's Ring latencies (p2p has no tree).
#ifndef TRAINSIM_COMM_DIRECT_H_
#define TRAINSIM_COMM_DIRECT_H_

#include <cstdint>
#include <vector>

#include "comm/schedule.h"
#include "comm/topology.h"

namespace trainsim::comm {

// REQUIRES: gpus distinct, size >= 2; bytes > 0.
TransferSchedule BuildAllToAllSchedule(const Topology& topology, const std::vector<int>& gpus,
                                       uint64_t bytes);
// REQUIRES: gpus = {src, dst}, distinct; bytes > 0.
TransferSchedule BuildSendRecvSchedule(const Topology& topology, const std::vector<int>& gpus,
                                       uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_DIRECT_H_
