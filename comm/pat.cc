// How the PAT schedule is built (the contract and the model are in pat.h).

#include "comm/pat.h"

#include <algorithm>

#include "comm/nvls.h"

namespace trainsim::comm {

Result<TransferSchedule> BuildPatSchedule(const Topology& topology, Op op,
                                          const std::vector<int>& gpus, uint64_t bytes) {
  if (op != Op::kAllGather && op != Op::kReduceScatter) {
    return Status::FailedPrecondition("pat implements all_gather and reduce_scatter only");
  }
  const auto segments = SplitByNode(topology, gpus);
  if (segments.size() != gpus.size()) {
    return Status::FailedPrecondition(
        "pat needs one group GPU per node (NCCL enables PAT only when every rank is on its own "
        "node)");
  }
  std::vector<int> order = gpus;
  std::sort(order.begin(), order.end());
  const int64_t n = static_cast<int64_t>(order.size());
  const uint64_t block = CeilDiv(bytes, static_cast<uint64_t>(n));
  TransferSchedule s;
  s.family = LatencyFamily::kPat;
  s.efficiency = 0.75;  // tuning.cc: PAT busBw *= .75
  int64_t wave = 0;
  for (int64_t d = 1; d < n; d *= 2, ++wave) {
    const uint64_t payload = static_cast<uint64_t>(std::min(d, n - d)) * block;
    for (int64_t i = 0; i < n; ++i) {
      PipelinedTransfer t;
      // All-gather sends to the rank d ahead; reduce-scatter mirrors it (d behind).
      const int64_t peer = op == Op::kAllGather ? (i + d) % n : (i - d + n) % n;
      t.src_gpu = order[static_cast<size_t>(i)];
      t.dst_gpu = order[static_cast<size_t>(peer)];
      t.payload_bytes = payload;
      t.first_wave = wave;
      // Symmetric by construction: every rank of a step sends the same blocks the same distance
      // (every leg crosses nodes); max_min.h splits off members that would not share the rate.
      t.flow_class = 0;
      s.transfers.push_back(t);
    }
  }
  const Hop network = MakeHop(topology, order[0], order[1]);
  const int log_n = Log2Floor(n);
  s.chain_latency_s = [network, log_n, n](const ProtocolCosts& costs) {
    // tuning.cc: log2i(nNodes)·(interLat / 3.5) + nRanks·2.8 us (its "still linear part").
    return log_n * HopLatency(costs, network) / 3.5 + static_cast<double>(n) * 2.8e-6;
  };
  return s;
}

}  // namespace trainsim::comm
