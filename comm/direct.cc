#include "comm/direct.h"

#include <algorithm>

namespace trainsim::comm {

namespace {

// Latency of transfers that all run at once: the slowest hop's. The physical latency is taken
// as the largest of each class (hops of one class differ only by switch levels).
std::function<double(const ProtocolCosts&)> OneHopLatency(
    const Topology& topology, const std::vector<PipelinedTransfer>& ts) {
  Hop nvlink{HopClass::kNvlink, -1};
  Hop network{HopClass::kNetwork, -1};
  std::vector<LinkId> path;
  for (const auto& t : ts) {
    topology.RouteInto(t.src_gpu, t.dst_gpu, &path);
    Hop& h = HopClassOf(topology, t.src_gpu, t.dst_gpu) == HopClass::kNvlink ? nvlink : network;
    h.path_latency_s = std::max(h.path_latency_s, topology.PathLatency(path).seconds());
  }
  return [nvlink, network](const ProtocolCosts& costs) {
    double worst = 0;
    if (nvlink.path_latency_s >= 0) worst = std::max(worst, HopLatency(costs, nvlink));
    if (network.path_latency_s >= 0) worst = std::max(worst, HopLatency(costs, network));
    return worst;
  };
}

}  // namespace

TransferSchedule BuildAllToAllSchedule(const Topology& topology, const std::vector<int>& gpus,
                                       uint64_t bytes) {
  const uint64_t n = gpus.size();
  const uint64_t per_peer = CeilDiv(bytes, n);
  TransferSchedule s;
  s.family = LatencyFamily::kRing;
  s.transfers.reserve(static_cast<size_t>(n * (n - 1)));
  for (int src : gpus) {
    for (int dst : gpus) {
      if (src == dst) continue;
      PipelinedTransfer t;
      t.src_gpu = src;
      t.dst_gpu = dst;
      t.payload_bytes = per_peer;
      // One class per hop kind, as the ring's legs (the solver splits off members that would
      // not share their class's rate, so the rates stay the per-flow solution).
      t.flow_class = HopClassOf(topology, src, dst) == HopClass::kNvlink ? 0 : 1;
      s.transfers.push_back(t);
    }
  }
  s.chain_latency_s = OneHopLatency(topology, s.transfers);
  return s;
}

TransferSchedule BuildSendRecvSchedule(const Topology& topology, const std::vector<int>& gpus,
                                       uint64_t bytes) {
  TransferSchedule s;
  s.family = LatencyFamily::kRing;
  PipelinedTransfer t;
  t.src_gpu = gpus[0];
  t.dst_gpu = gpus[1];
  t.payload_bytes = bytes;
  s.transfers.push_back(t);
  s.chain_latency_s = OneHopLatency(topology, s.transfers);
  return s;
}

}  // namespace trainsim::comm
