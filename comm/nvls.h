// comm NVLS all-reduce — NVLink SHARP inside an NVSwitch domain, as NCCL's NVLS and NVLS_TREE
// algorithms run it (Hopper and Blackwell: NVSwitch 3 and later; topology.spec().nvls).
//
// NVLS inside a node of m GPUs, H heads (one per distinct NIC; H = m inside a node): for each of
// the H shards of c = S/H bytes the switch reads the shard from every GPU and reduces it
// (multimem.ld_reduce), the shard's head stores the result once to the multicast address
// (multimem.st) and the switch copies it to every GPU. Per GPU that is S up and S down its NVLink,
// plus c each way for a head: (m+1)/m · S per direction inside one node, against the ring's
// 2(m−1)/m · S. NVSwitch legs get nvls_efficiency (tuning.cc nvlsEfficiency: Hopper 0.85,
// Blackwell 0.74) of the NVLink bandwidth the ring gets.
//   - BuildNvlsSchedule: one node; or several nodes when IB SHARP (topology.spec().sharp)
//     reduces between them — each head sends its shard up through its NIC and gets the result
//     back (NCCL enables multi-node NVLS only with CollNet).
//   - BuildNvlsTreeSchedule: several nodes; the heads of one rail run a double binary tree over
//     the nodes (each tree half the shard), as NCCL's NVLS_TREE.
// The phases pipeline, so each is one wave: a GPU's NVSwitch legs one transfer per direction of
// all its shards, the network legs equal transfers whose count on a link is the bytes it
// carries; closed form T = latency + max over links of bytes / bandwidth.
// Latency (tuning.cc): NVLS 25 µs (NVLink hop) [+ one network hop of 18 µs across nodes];
// NVLS_TREE 25 µs + 2·⌊log2 N⌋ network hops of 20.9 µs; Simple protocol only.
// Errors (FailedPrecondition): no NVLS on the topology, nodes holding different numbers of the
// group's GPUs, fewer than two GPUs per node, NVLS across nodes without SHARP, NVLS_TREE inside
// one node.
#ifndef TRAINSIM_COMM_NVLS_H_
#define TRAINSIM_COMM_NVLS_H_

#include <cstdint>
#include <vector>

#include "comm/schedule.h"
#include "comm/topology.h"
#include "sim/status.h"

namespace trainsim::comm {

Result<TransferSchedule> BuildNvlsSchedule(const Topology& topology, const std::vector<int>& gpus,
                                           uint64_t bytes);
Result<TransferSchedule> BuildNvlsTreeSchedule(const Topology& topology,
                                               const std::vector<int>& gpus, uint64_t bytes);

// The group's GPUs split by node (every node the same count, else InvalidArgument naming the
// algorithm) and each node's heads: its first GPU on each distinct NIC, in NIC order.
struct NodeGroups {
  std::vector<std::vector<int>> segments;
  std::vector<std::vector<int>> heads;
};
Result<NodeGroups> SplitEvenlyByNode(const Topology& topology, const std::vector<int>& gpus,
                                     const char* algorithm);

// NCCL's log2i: ⌊log2 n⌋ for n >= 1.
int Log2Floor(int64_t n);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_NVLS_H_
