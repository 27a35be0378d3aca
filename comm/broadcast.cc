#include "comm/broadcast.h"

#include <algorithm>
#include <memory>

namespace trainsim::comm {

TransferSchedule BuildBroadcastSchedule(const Topology& topology, const std::vector<int>& gpus,
                                        uint64_t bytes) {
  const int root = gpus.front();
  const auto segments = SplitByNode(topology, gpus);
  const int channels = ChannelCount(topology, segments);
  const int64_t n = static_cast<int64_t>(gpus.size());
  const uint64_t per_channel = CeilDiv(bytes, static_cast<uint64_t>(channels));
  const int64_t chunks = PipelineChunks(per_channel, 512 * 1024, 512 * 1024, 1, channels * (n - 1));
  const uint64_t chunk = CeilDiv(per_channel, static_cast<uint64_t>(chunks));
  TransferSchedule s;
  s.family = LatencyFamily::kRing;
  // Each channel's chain of hops from the root, for the chain latency.
  auto chains = std::make_shared<std::vector<std::vector<Hop>>>();
  for (int c = 0; c < channels; ++c) {
    std::vector<int> order = RingOrder(topology, segments, c);
    std::rotate(order.begin(), std::find(order.begin(), order.end(), root), order.end());
    chains->emplace_back();
    for (int64_t j = 0; j + 1 < n; ++j) {
      chains->back().push_back(
          MakeHop(topology, order[static_cast<size_t>(j)], order[static_cast<size_t>(j + 1)]));
      PipelinedTransfer t;
      t.src_gpu = order[static_cast<size_t>(j)];
      t.dst_gpu = order[static_cast<size_t>(j + 1)];
      t.payload_bytes = chunk;
      t.first_wave = j;
      t.num_waves = chunks;
      s.transfers.push_back(t);
    }
  }
  s.chain_latency_s = [chains](const ProtocolCosts& costs) {
    double worst = 0;
    for (const auto& chain : *chains) {
      double sum = 0;
      for (const Hop& h : chain) sum += HopLatency(costs, h);
      worst = std::max(worst, sum);
    }
    return worst;
  };
  return s;
}

}  // namespace trainsim::comm
