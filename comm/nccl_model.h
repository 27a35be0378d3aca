// comm NCCL cost constants — the latencies and protocol factors of NCCL's own tuner.
//
// From NVIDIA/nccl src/graph/tuning.cc (v2.30; docs/evidence/references.md): NCCL predicts
// time = baseLat + Σ hop latencies + bytes / bandwidth per (algorithm, protocol). We use its
// base latency per algorithm/protocol, its per-hop latency for NVLink and network hops, and the
// bandwidth caps of the low-latency protocols: LL carries 8 bytes of data per 16 on the wire and
// tuning.cc caps Ring/LL at 0.5 of the bus bandwidth; LL128 at 0.92 (120 data bytes per 128-byte
// line, plus its own cap); Simple at 1.0. NVLS, NVLS-tree, CollNet and PAT run only the Simple
// protocol (tuning.cc skips the others): their LL and LL128 costs are infinite. Everything else
// (link bandwidths and which link is the bottleneck) comes from the topology.
#ifndef TRAINSIM_COMM_NCCL_MODEL_H_
#define TRAINSIM_COMM_NCCL_MODEL_H_

#include <cstdint>

#include "comm/collective.h"

namespace trainsim::comm {

// Which of NCCL's latency tables an algorithm uses: Ring (ring, broadcast, send/recv,
// all-to-all, hierarchical phases), Tree (double binary tree), NVLS, NVLS-tree, CollNet Direct
// (IB SHARP) or PAT.
enum class LatencyFamily { kRing, kTree, kNvls, kNvlsTree, kCollNet, kPat };

enum class HopClass { kNvlink, kNetwork };

struct ProtocolCosts {
  double base_s;         // per collective launch (+inf: the family does not run the protocol)
  double nvlink_hop_s;   // per NVLink hop (end-to-end, includes the wire)
  double network_hop_s;  // per network hop
  double bw_factor;      // fraction of link bandwidth that carries data
};

ProtocolCosts NcclCosts(LatencyFamily family, Protocol protocol);

inline constexpr Protocol kAllProtocols[] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

// Bytes on the wire for `payload` bytes under the protocol (rounded up): payload / bw_factor,
// and for the tree family a further / 0.92 (tuning.cc caps Tree all-reduce at 0.92 of the bus
// bandwidth, for the reduction's extra memory traffic at each interior node).
uint64_t WireBytes(uint64_t payload, Protocol protocol, LatencyFamily family);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_NCCL_MODEL_H_
