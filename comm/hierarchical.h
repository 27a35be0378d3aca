// comm hierarchical all-reduce — reduce-scatter inside each node, all-reduce across nodes,
// all-gather inside each node (Horovod's and Megatron's hierarchical scheme; three NCCL calls).
//
// Phase 1: a ring reduce-scatter over each node's m GPUs (m−1 steps of S/m). Phase 2: m
// concurrent ring all-reduces across the N nodes, one per local GPU index (each on that GPU's
// rail), of S/m each (2(N−1) steps of S/(m·N)). Phase 3: a ring all-gather inside each node (m−1
// steps of S/m). REQUIRES every node of the group to hold the same number of GPUs.
//
// Closed form: T = 3·base + (m−1)(α_nvl + ⌈S/m⌉/(f·r₁)) + 2(N−1)(α_net + ⌈S/(mN)⌉/(f·r₂))
//                 + (m−1)(α_nvl + ⌈S/m⌉/(f·r₁)),
// with NCCL's Ring latencies and r the bottleneck shares (NVLink inside, NIC across).
// Expansion: the three phases' waves as flows.
#ifndef TRAINSIM_COMM_HIERARCHICAL_H_
#define TRAINSIM_COMM_HIERARCHICAL_H_

#include <cstdint>
#include <vector>

#include "comm/schedule.h"
#include "comm/topology.h"
#include "sim/status.h"

namespace trainsim::comm {

// Fails (InvalidArgument) when nodes hold different numbers of the group's GPUs.
Result<TransferSchedule> BuildHierarchicalSchedule(const Topology& topology,
                                                   const std::vector<int>& gpus, uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_HIERARCHICAL_H_
