// comm tree all-reduce — NCCL's double binary tree, pipelined in chunks.
//
// As NCCL builds it (src/graph/trees.cc, ncclGetBtree/ncclGetDtree): two binary trees over the
// group's nodes, tree 1 the mirror or shift of tree 0, so a node that is a leaf in one tree is
// interior in the other; inside a node a chain of GPUs ends at the head GPU. Each tree carries
// half the data per channel (one per NIC rail). Reduce goes up, broadcast comes down, in chunks
// of 512 KiB halved down to 128 KiB (NCCL enqueue.cc's rule), one hop per wave.
//
// Closed form: T = base + L + Σ over waves c / (f · 0.92 · r_w), with L the leaf → root → leaf
// latency chain, c the chunk, f the protocol's data fraction, 0.92 tuning.cc's tree cap and r_w
// the most loaded link's share in wave w. Expansion: the same waves as flows, with the fill and
// the drain each closed into one segment of one flow per transfer (the steady state is already
// one: every chunk step moves the same transfers) — the same time on an idle network, and where
// it differs under contention: schedule.h, "Closing". Bytes and seconds; deterministic. The
// parent rule and the wave of each chunk: tree.cc.
#ifndef TRAINSIM_COMM_TREE_H_
#define TRAINSIM_COMM_TREE_H_

#include <cstdint>
#include <vector>

#include "comm/schedule.h"
#include "comm/topology.h"

namespace trainsim::comm {

// Parent of each position 0..n−1 in NCCL's tree `which` (0 or 1) of the double binary tree;
// −1 for the root.
std::vector<int> DoubleBinaryTreeParents(int n, int which);

// REQUIRES: gpus distinct, size >= 2; bytes > 0.
TransferSchedule BuildTreeSchedule(const Topology& topology, const std::vector<int>& gpus,
                                   uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_TREE_H_
