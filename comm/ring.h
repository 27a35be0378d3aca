// comm ring collectives — ring all-reduce, reduce-scatter and all-gather.
//
// As NCCL runs them: C rings ("channels"), one per NIC rail when the group spans nodes and one
// inside a node, each carrying 1/C of the data in n·C chunks; in each of K steps every rank
// sends one chunk to its ring successor (K = 2(n−1) for all-reduce, n−1 for reduce-scatter and
// all-gather).
//
// Closed form (alpha-beta, idle network): T = base + L + K · ⌈S/(n·C)⌉ / (f · r), with L the
// largest sum of K consecutive hop latencies around a ring, f the protocol's data fraction and
// r the most loaded link's share in a step; with one ring and r = B this is nccl-tests'
// t = 2(n−1)/n · S/B + 2(n−1)·α. Expansion: K waves of n·C flows on the FlowNetwork. Bytes and
// seconds; deterministic. Each term and its source: ring.cc.
#ifndef TRAINSIM_COMM_RING_H_
#define TRAINSIM_COMM_RING_H_

#include <cstdint>
#include <vector>

#include "comm/collective.h"
#include "comm/schedule.h"
#include "comm/topology.h"

namespace trainsim::comm {

// REQUIRES: op is all-reduce, reduce-scatter or all-gather; gpus distinct, size >= 2; bytes > 0.
TransferSchedule BuildRingSchedule(const Topology& topology, Op op, const std::vector<int>& gpus,
                                   uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_RING_H_
