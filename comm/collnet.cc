// How the CollNet (IB SHARP) schedule is built (the contract and the model are in collnet.h).

#include "comm/collnet.h"

#include <algorithm>

#include "comm/nvls.h"

namespace trainsim::comm {

Result<TransferSchedule> BuildCollNetSchedule(const Topology& topology,
                                              const std::vector<int>& gpus, uint64_t bytes) {
  if (!topology.spec().sharp) {
    return Status::FailedPrecondition(
        "collnet needs IB SHARP in the fabric's switches (cluster.topology.sharp: true)");
  }
  Result<NodeGroups> g = SplitEvenlyByNode(topology, gpus, "collnet");
  if (!g.ok()) return g.status();
  if (g->segments.size() < 2) {
    return Status::FailedPrecondition(
        "collnet reduces in the network: the group must span more than one node");
  }
  const uint64_t shard = CeilDiv(bytes, g->heads.front().size());
  TransferSchedule s;
  s.family = LatencyFamily::kCollNet;
  auto add = [&s, shard](Leg leg, int src, int dst) {
    PipelinedTransfer t;
    t.leg = leg;
    t.src_gpu = src;
    t.dst_gpu = dst;
    t.payload_bytes = shard;
    // Symmetric by construction on every node: one class per leg kind (max_min.h checks each
    // member's rate).
    t.flow_class = static_cast<int>(leg);
    s.transfers.push_back(t);
  };
  for (size_t v = 0; v < g->segments.size(); ++v) {
    for (int head : g->heads[v]) {
      for (int gpu : g->segments[v]) {
        if (gpu == head) continue;
        add(Leg::kGpuToGpu, gpu, head);  // the GPU's part of the head's shard
        add(Leg::kGpuToGpu, head, gpu);  // the reduced shard back
      }
      add(Leg::kToNetSwitch, head, head);
      add(Leg::kFromNetSwitch, head, head);
    }
  }
  const int64_t m = static_cast<int64_t>(g->segments.front().size());
  const Hop nvlink = m > 1 ? MakeHop(topology, g->segments[0][0], g->segments[0][1]) : Hop{};
  const Hop network = MakeHop(topology, g->heads[0][0], g->heads[1][0]);
  s.chain_latency_s = [nvlink, network, m](const ProtocolCosts& costs) {
    // tuning.cc: 2·(min(1, ppn−1)·intraLat + (ppn−1)·0.4 us arity serialisation) + interLat.
    const double intra = m > 1 ? HopLatency(costs, nvlink) : 0.0;
    return 2.0 * (intra + static_cast<double>(m - 1) * 0.4e-6) + HopLatency(costs, network);
  };
  return s;
}

}  // namespace trainsim::comm
