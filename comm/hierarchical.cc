#include "comm/hierarchical.h"

#include <algorithm>
#include <memory>
#include <string>

namespace trainsim::comm {

Result<TransferSchedule> BuildHierarchicalSchedule(const Topology& topology,
                                                   const std::vector<int>& gpus, uint64_t bytes) {
  const auto segments = SplitByNode(topology, gpus);
  const int64_t m = static_cast<int64_t>(segments.front().size());
  for (const auto& seg : segments) {
    if (static_cast<int64_t>(seg.size()) != m) {
      return Status::InvalidArgument(
          "hierarchical all-reduce needs the same number of group GPUs on every node (node " +
          std::to_string(topology.node_of(seg.front())) + " has " + std::to_string(seg.size()) +
          ", node " + std::to_string(topology.node_of(segments.front().front())) + " has " +
          std::to_string(m) + ")");
    }
  }
  const int64_t nodes = static_cast<int64_t>(segments.size());
  const int64_t intra_steps = m - 1;
  const int64_t inter_steps = 2 * (nodes - 1);
  const uint64_t intra_chunk = CeilDiv(bytes, static_cast<uint64_t>(m));
  const uint64_t inter_chunk = CeilDiv(intra_chunk, static_cast<uint64_t>(nodes));

  TransferSchedule s;
  s.family = LatencyFamily::kRing;
  s.launches = 3;
  auto add = [&](int src, int dst, uint64_t payload, int64_t first, int64_t count) {
    PipelinedTransfer t;
    t.src_gpu = src;
    t.dst_gpu = dst;
    t.payload_bytes = payload;
    t.first_wave = first;
    t.num_waves = count;
    // Symmetric by construction, as the ring's legs: the intra-node rings' NVLink legs form one
    // class, the cross-node rings' legs another (max_min.h checks each member's rate).
    t.flow_class = HopClassOf(topology, src, dst) == HopClass::kNvlink ? 0 : 1;
    s.transfers.push_back(t);
  };
  // Hops of every intra-node ring and every cross-node ring, for the chain latency.
  auto intra_rings = std::make_shared<std::vector<std::vector<Hop>>>();
  auto inter_rings = std::make_shared<std::vector<std::vector<Hop>>>();
  if (intra_steps > 0) {
    for (const auto& seg : segments) {
      intra_rings->emplace_back();
      for (int64_t j = 0; j < m; ++j) {
        intra_rings->back().push_back(
            MakeHop(topology, seg[static_cast<size_t>(j)], seg[static_cast<size_t>((j + 1) % m)]));
      }
      for (int64_t j = 0; j < m; ++j) {
        const int src = seg[static_cast<size_t>(j)];
        const int dst = seg[static_cast<size_t>((j + 1) % m)];
        add(src, dst, intra_chunk, 0, intra_steps);                          // reduce-scatter
        add(src, dst, intra_chunk, intra_steps + inter_steps, intra_steps);  // all-gather
      }
    }
  }
  if (inter_steps > 0) {
    for (int64_t q = 0; q < m; ++q) {
      inter_rings->emplace_back();
      for (int64_t v = 0; v < nodes; ++v) {
        const int src = segments[static_cast<size_t>(v)][static_cast<size_t>(q)];
        const int dst = segments[static_cast<size_t>((v + 1) % nodes)][static_cast<size_t>(q)];
        add(src, dst, inter_chunk, intra_steps, inter_steps);
        inter_rings->back().push_back(MakeHop(topology, src, dst));
      }
    }
  }
  s.chain_latency_s = [intra_rings, inter_rings, intra_steps,
                       inter_steps](const ProtocolCosts& costs) {
    auto worst = [&costs](const std::vector<std::vector<Hop>>& rings, int64_t k) {
      double w = 0;
      std::vector<double> lat;
      for (const auto& ring : rings) {
        lat.clear();
        for (const Hop& h : ring) lat.push_back(HopLatency(costs, h));
        w = std::max(w, MaxCyclicWindowSum(lat, k));
      }
      return w;
    };
    // Reduce-scatter and all-gather inside the node, all-reduce across nodes, in sequence.
    return 2 * worst(*intra_rings, intra_steps) + worst(*inter_rings, inter_steps);
  };
  return s;
}

}  // namespace trainsim::comm
