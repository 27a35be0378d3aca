// comm ring collectives — ring all-reduce, reduce-scatter and all-gather.
//
// As NCCL runs them: C rings ("channels"), one per NIC rail when the group spans nodes (so each
// ring crosses between nodes on its own rail; 1 inside a node, where one ring already gets a
// GPU's whole NVLink bandwidth), each carrying 1/C of the data. The buffer is cut into n·C chunks;
// in each of K steps every rank sends one chunk to its ring successor (K = 2(n−1) for all-reduce:
// n−1 reduce-scatter steps then n−1 all-gather steps; K = n−1 for reduce-scatter or all-gather).
//
// Closed form (alpha-beta, idle network):
//   T = base + K · (α + ⌈S/(n·C)⌉ / (f · r))
// with base and α NCCL's Ring launch and per-hop latency for the protocol (the network hop's when
// the ring leaves a node, since every step waits for its slowest hop), f the protocol's data
// fraction, and r the max-min share of a step's flows on the bottleneck link (e.g. NVLink out of
// a GPU shared by the C channels' flows, or the NIC). With r = B this is nccl-tests'
// t = 2(n−1)/n · S/B + 2(n−1)·α. Expansion: K waves of n·C flows on the FlowNetwork.
#ifndef TRAINSIM_COMM_RING_H_
#define TRAINSIM_COMM_RING_H_

#include <cstdint>
#include <vector>

#include "comm/collective.h"
#include "comm/schedule.h"
#include "comm/topology.h"

namespace trainsim::comm {

// REQUIRES: op is all-reduce, reduce-scatter or all-gather; gpus distinct, size >= 2; bytes > 0.
Schedule BuildRingSchedule(const Topology& topology, Op op, const std::vector<int>& gpus,
                           uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_RING_H_
