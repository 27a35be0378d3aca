// How the NVLS schedules are built (the contract and the model are in nvls.h).

#include "comm/nvls.h"

#include <algorithm>
#include <memory>
#include <string>

#include "comm/tree.h"

namespace trainsim::comm {

int Log2Floor(int64_t n) {
  int k = 0;
  while (n > 1) {
    n >>= 1;
    ++k;
  }
  return k;
}

Result<NodeGroups> SplitEvenlyByNode(const Topology& topology, const std::vector<int>& gpus,
                                     const char* algorithm) {
  NodeGroups g;
  g.segments = SplitByNode(topology, gpus);
  const size_t m = g.segments.front().size();
  for (const auto& seg : g.segments) {
    if (seg.size() != m) {
      return Status::InvalidArgument(
          std::string(algorithm) + " needs the same number of group GPUs on every node (node " +
          std::to_string(topology.node_of(seg.front())) + " has " + std::to_string(seg.size()) +
          ", node " + std::to_string(topology.node_of(g.segments.front().front())) + " has " +
          std::to_string(m) + ")");
    }
    g.heads.emplace_back();
    std::vector<int> nics;
    for (int gpu : seg) {
      if (std::find(nics.begin(), nics.end(), topology.nic_of(gpu)) != nics.end()) continue;
      nics.push_back(topology.nic_of(gpu));
      g.heads.back().push_back(gpu);
    }
  }
  return g;
}

namespace {

void Add(TransferSchedule* s, Leg leg, int src, int dst, uint64_t payload, int copies) {
  for (int i = 0; i < copies; ++i) {
    PipelinedTransfer t;
    t.leg = leg;
    t.src_gpu = src;
    t.dst_gpu = dst;
    t.payload_bytes = payload;
    // Symmetric by construction: every GPU's (or head's) leg of one kind in a segment, so one
    // flow class per leg kind (max_min.h; the solver splits members that would not share a rate).
    t.flow_class = static_cast<int>(leg);
    s->transfers.push_back(t);
  }
}

Status CheckNvls(const Topology& topology, const NodeGroups& g, const char* algorithm) {
  if (!topology.spec().nvls) {
    return Status::FailedPrecondition(
        std::string(algorithm) +
        " needs NVLink SHARP: an NVSwitch 3 or later (Hopper or Blackwell GPUs); this cluster's "
        "NVLink fabric has none");
  }
  if (g.segments.front().size() < 2) {
    return Status::FailedPrecondition(std::string(algorithm) +
                                      " needs at least two group GPUs on each node");
  }
  return Status::Ok();
}

// NVSwitch legs of NVLS on every node: S up and down per GPU in shards of c, plus one shard
// each way for a head (its multicast store and its reduced shard). A GPU's NVLink up and down
// links carry only its own legs, so each direction is one transfer of all its shards.
void AddNvswitchLegs(TransferSchedule* s, const NodeGroups& g, uint64_t shard) {
  const uint64_t h = g.heads.front().size();
  for (size_t v = 0; v < g.segments.size(); ++v) {
    for (int gpu : g.segments[v]) {
      const bool head = std::find(g.heads[v].begin(), g.heads[v].end(), gpu) != g.heads[v].end();
      const uint64_t bytes = (h + (head ? 1 : 0)) * shard;
      Add(s, Leg::kToNvswitch, gpu, gpu, bytes, 1);
      Add(s, Leg::kFromNvswitch, gpu, gpu, bytes, 1);
    }
  }
}

}  // namespace

Result<TransferSchedule> BuildNvlsSchedule(const Topology& topology, const std::vector<int>& gpus,
                                           uint64_t bytes) {
  Result<NodeGroups> g = SplitEvenlyByNode(topology, gpus, "nvls");
  if (!g.ok()) return g.status();
  TRAINSIM_RETURN_IF_ERROR(CheckNvls(topology, *g, "nvls"));
  const bool multi_node = g->segments.size() > 1;
  if (multi_node && !topology.spec().sharp) {
    return Status::FailedPrecondition(
        "nvls across nodes needs IB SHARP in the switches (cluster.topology.sharp), as NCCL "
        "enables NVLS between nodes only with CollNet; nvls_tree runs without it");
  }
  const uint64_t shard = CeilDiv(bytes, g->heads.front().size());
  TransferSchedule s;
  s.family = LatencyFamily::kNvls;
  AddNvswitchLegs(&s, *g, shard);
  if (multi_node) {
    for (const auto& heads : g->heads) {
      for (int head : heads) {
        Add(&s, Leg::kToNetSwitch, head, head, shard, 1);
        Add(&s, Leg::kFromNetSwitch, head, head, shard, 1);
      }
    }
  }
  const int a = g->segments.front()[0];
  const int b = g->segments.front()[1];
  const Hop nvlink = MakeHop(topology, a, b);
  const Hop network = multi_node ? MakeHop(topology, g->heads[0][0], g->heads[1][0]) : Hop{};
  s.chain_latency_s = [nvlink, network, multi_node](const ProtocolCosts& costs) {
    // tuning.cc: NVLS latency = intraLat (+ interLat across nodes); no base latency.
    return HopLatency(costs, nvlink) + (multi_node ? HopLatency(costs, network) : 0.0);
  };
  return s;
}

Result<TransferSchedule> BuildNvlsTreeSchedule(const Topology& topology,
                                               const std::vector<int>& gpus, uint64_t bytes) {
  Result<NodeGroups> g = SplitEvenlyByNode(topology, gpus, "nvls_tree");
  if (!g.ok()) return g.status();
  TRAINSIM_RETURN_IF_ERROR(CheckNvls(topology, *g, "nvls_tree"));
  const int nodes = static_cast<int>(g->segments.size());
  if (nodes < 2) {
    return Status::FailedPrecondition(
        "nvls_tree needs a group on more than one node (NCCL disables it inside one node; use "
        "nvls)");
  }
  const size_t h = g->heads.front().size();
  const uint64_t shard = CeilDiv(bytes, h);
  TransferSchedule s;
  s.family = LatencyFamily::kNvlsTree;
  AddNvswitchLegs(&s, *g, shard);
  // Between nodes: per rail (head index), NCCL's double binary tree over the nodes, each tree
  // half the shard, reduced up and broadcast down.
  const uint64_t half = CeilDiv(shard, 2);
  for (int which = 0; which < 2; ++which) {
    const std::vector<int> parent = DoubleBinaryTreeParents(nodes, which);
    for (int v = 0; v < nodes; ++v) {
      const int p = parent[static_cast<size_t>(v)];
      if (p < 0) continue;
      for (size_t k = 0; k < h; ++k) {
        const int child_head = g->heads[static_cast<size_t>(v)][k];
        const int parent_head = g->heads[static_cast<size_t>(p)][k];
        Add(&s, Leg::kGpuToGpu, child_head, parent_head, half, 1);
        Add(&s, Leg::kGpuToGpu, parent_head, child_head, half, 1);
      }
    }
  }
  const Hop nvlink = MakeHop(topology, g->segments.front()[0], g->segments.front()[1]);
  const Hop network = MakeHop(topology, g->heads[0][0], g->heads[1][0]);
  const int depth = Log2Floor(nodes);
  s.chain_latency_s = [nvlink, network, depth](const ProtocolCosts& costs) {
    // tuning.cc: NVLS_TREE latency = intraLat + 2·log2i(nNodes)·interLat.
    return HopLatency(costs, nvlink) + 2.0 * depth * HopLatency(costs, network);
  };
  return s;
}

}  // namespace trainsim::comm
