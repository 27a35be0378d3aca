// comm ring collectives — ring all-reduce, reduce-scatter and all-gather.
//
// As NCCL runs them: C rings ("channels"), one per NIC rail when the group spans nodes (so each
// ring crosses between nodes on its own rail; 1 inside a node, where one ring already gets a
// GPU's whole NVLink bandwidth), each carrying 1/C of the data. The buffer is cut into n·C chunks;
// in each of K steps every rank sends one chunk to its ring successor (K = 2(n−1) for all-reduce:
// n−1 reduce-scatter steps then n−1 all-gather steps; K = n−1 for reduce-scatter or all-gather).
//
// Closed form (alpha-beta, idle network):
//   T = base + L + K · ⌈S/(n·C)⌉ / (f · r)
// with base NCCL's Ring launch latency for the protocol, L the largest sum of K consecutive hop
// latencies around a channel's ring (NCCL's per-hop NVLink or network latency, or the physical
// path latency when larger; a step's data must cross K hops in sequence — NCCL's
// (K − K_inter)·α_intra + K_inter·α_inter), f the protocol's data fraction, and r the share of
// the most loaded link in a step (e.g. a GPU's NVLink out, shared by the C channels' flows, or a
// NIC). With one ring and r = B this is nccl-tests' t = 2(n−1)/n · S/B + 2(n−1)·α.
// Expansion: K waves of n·C flows on the FlowNetwork.
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
