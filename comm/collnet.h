// comm CollNet all-reduce — IB SHARP in-network reduction, as NCCL's CollNet Direct runs it
// (topology.spec().sharp: the scenario's switches reduce; cluster.topology.sharp).
//
// Inside each node of m GPUs with H heads (one per distinct NIC), every GPU sends each head its
// shard of c = S/H bytes over NVLink ("direct"); each head sends the node's shard up through its
// NIC to the switch tree, which reduces over all nodes and returns the result; the head sends it
// to every local GPU. A NIC therefore carries c each way — S/H, where a ring carries about 2S/H
// (SHARP halves the bytes a NIC sends for all-reduce). The phases pipeline: one wave whose
// transfers' multiplicity is what each link carries; closed form T = latency + max over links of
// bytes / bandwidth. Latency (tuning.cc, CollNet Direct): 2·(min(1, m−1)·3.7 µs + (m−1)·0.4 µs)
// + 31 µs for the switch tree; base 0; Simple protocol only.
// Errors (FailedPrecondition): no SHARP on the topology, a group inside one node; nodes holding
// different numbers of the group's GPUs (InvalidArgument).
#ifndef TRAINSIM_COMM_COLLNET_H_
#define TRAINSIM_COMM_COLLNET_H_

#include <cstdint>
#include <vector>

#include "comm/schedule.h"
#include "comm/topology.h"
#include "sim/status.h"

namespace trainsim::comm {

Result<TransferSchedule> BuildCollNetSchedule(const Topology& topology,
                                              const std::vector<int>& gpus, uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_COLLNET_H_
