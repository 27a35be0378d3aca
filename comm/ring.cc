// How the ring collectives are built and timed (the contract is in ring.h).
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

#include "comm/ring.h"

#include <algorithm>
#include <memory>

namespace trainsim::comm {

TransferSchedule BuildRingSchedule(const Topology& topology, Op op, const std::vector<int>& gpus,
                                   uint64_t bytes) {
  const auto segments = SplitByNode(topology, gpus);
  const int channels = ChannelCount(topology, segments);
  const int64_t n = static_cast<int64_t>(gpus.size());
  const int64_t steps = op == Op::kAllReduce ? 2 * (n - 1) : n - 1;
  const uint64_t chunk = CeilDiv(bytes, static_cast<uint64_t>(n) * static_cast<uint64_t>(channels));
  TransferSchedule s;
  s.family = LatencyFamily::kRing;
  s.transfers.reserve(static_cast<size_t>(n * channels));
  // Hops of each channel's ring, for the chain latency: K consecutive hops of the ring.
  auto rings = std::make_shared<std::vector<std::vector<Hop>>>();
  for (int c = 0; c < channels; ++c) {
    const std::vector<int> order = RingOrder(topology, segments, c);
    rings->emplace_back();
    for (int64_t j = 0; j < n; ++j) {
      rings->back().push_back(MakeHop(topology, order[static_cast<size_t>(j)],
                                      order[static_cast<size_t>((j + 1) % n)]));
      PipelinedTransfer t;
      t.src_gpu = order[static_cast<size_t>(j)];
      t.dst_gpu = order[static_cast<size_t>((j + 1) % n)];
      t.payload_bytes = chunk;
      t.first_wave = 0;
      t.num_waves = steps;
      // Symmetric by construction on every rank and channel: the NVLink legs inside a node form
      // one class, the legs between nodes another (max_min.h checks each member's rate).
      t.flow_class = HopClassOf(topology, t.src_gpu, t.dst_gpu) == HopClass::kNvlink ? 0 : 1;
      s.transfers.push_back(t);
    }
  }
  s.chain_latency_s = [rings, steps](const ProtocolCosts& costs) {
    double worst = 0;
    std::vector<double> lat;
    for (const auto& ring : *rings) {
      lat.clear();
      for (const Hop& h : ring) lat.push_back(HopLatency(costs, h));
      worst = std::max(worst, MaxCyclicWindowSum(lat, steps));
    }
    return worst;
  };
  return s;
}

}  // namespace trainsim::comm
