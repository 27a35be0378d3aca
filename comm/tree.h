// comm tree all-reduce — NCCL's double binary tree, pipelined in chunks.
//
// As NCCL builds it (src/graph/trees.cc, ncclGetBtree/ncclGetDtree): the nodes of the group form
// two binary trees over node positions 0..N−1 — tree 0 with NCCL's bit rule (parent of r is
// (r ^ b) | (b << 1), b = r's lowest set bit, or r ^ b when that is out of range) and tree 1 its
// mirror (N even) or shift by one (N odd), so a node that is a leaf in one tree is interior in
// the other. Inside a node the GPUs form a chain ending at the "head" GPU that talks to the
// network. Each tree carries half the data, per channel (one per NIC rail, as for rings).
// Reduce goes up (chain to head, children heads to parent head), broadcast comes down; chunks
// are pipelined: a chunk passes one hop per wave, so chunk i crosses the up hop of a node of
// height h at wave i + (M−1) + h (M = GPUs per node) and the tree finishes after
// P − 1 + 2(M−1) + H + D waves (P chunks, H root height, D max depth).
// Chunking: 512 KiB per chunk, halved down to 128 KiB while there are fewer than 8·depth chunks
// (NCCL enqueue.cc's rule for Tree/Simple), capped by the expansion's flow budget.
//
// Closed form: T = base + L + Σ over waves c / (f · 0.92 · r_w), where L is the latency of the
// leaf → root → leaf chain of hops (NCCL's Tree hop latencies; with uniform hops NCCL's
// 2((M−1)·α_nvlink + D·α_net)), c the chunk, f the protocol's data fraction, 0.92 tuning.cc's
// tree cap and r_w the most loaded link's share in wave w. Expansion: the same waves as flows.
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
Schedule BuildTreeSchedule(const Topology& topology, const std::vector<int>& gpus, uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_TREE_H_
