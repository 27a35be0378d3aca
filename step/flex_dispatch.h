// step flex_dispatch — what the FLEX token dispatcher's all-to-alls take as HybridEP's kernels
// run them (DeepEP's hybrid-ep branch, the backend Megatron-Bridge's MoE recipes select).
//
// Inside one NVLink domain a dispatch or a combine is one all-to-all of the tokens deduplicated
// per destination rank. Across nodes it is two legs that one kernel pipelines: the network leg
// (each token once to every other node it picked, to the rank of the same local index) and
// the NVLink leg inside each node (every token the node holds, once to each local rank it
// picked). The caller times each leg with comm's all-to-all (NCCL's rates, docs/collectives.md);
// HybridEP reaches a fixed share of those rates, and the collective lasts as long as the
// slower leg. Contract: pure functions of their arguments; nvl_s == 0 means one NVLink domain.
#ifndef TRAINSIM_STEP_FLEX_DISPATCH_H_
#define TRAINSIM_STEP_FLEX_DISPATCH_H_

#include <algorithm>
#include <vector>

#include "comm/schedule.h"
#include "comm/topology.h"
#include "parallelism/model.h"
#include "sim/status.h"

namespace trainsim::step {

// HybridEP's dispatch and combine kernels against comm's all-to-all of the same bytes: comm's
// time over the published kernel-only time (deepseek-ai/DeepEP, docs/README_Hybrid-EP.md on the
// hybrid-ep branch, tables of 2025-11-18; 4,096 tokens of hidden 7,168 per rank, top-8, 8
// experts per rank, uniform routing; BF16 dispatch / combine), where one leg binds:
// H100 over 4 and 8 nodes (the network leg) 0.907 / 0.904 and 0.915 / 0.911; one NVLink domain
// (B200, 8 ranks) 0.920 / 0.844; GB200 NVL72 8, 16, 32 ranks 0.957 / 0.923, 0.942 / 0.888,
// 0.882 / 0.831. One value for both kernels and every platform; none is more than 9% from it.
inline constexpr double kHybridEpKernelEfficiency = 0.90;
// The NVLink leg across nodes: it binds on two H100 nodes, where a token's copies mostly stay
// inside the node (16 ranks: 0.584 dispatch, 0.513 combine of comm's rate). The kernel's
// forwarding warps there also wait on the network's arrivals, which one domain's kernels never
// do (no published breakdown says how its SMs divide; this is the measured whole).
inline constexpr double kHybridEpForwardEfficiency = 0.55;

// Seconds of one FLEX all-to-all from comm's time for its network leg (or its only leg, in one
// NVLink domain) and for its NVLink forwarding leg across nodes (0: none).
inline double FlexSeconds(double network_s, double nvl_s) {
  return std::max(network_s / kHybridEpKernelEfficiency, nvl_s / kHybridEpForwardEfficiency);
}

// Seconds of the layer collective `col` whose comm time for `col.bytes` is `comm_s`: itself
// unless it is a FLEX all-to-all, which FlexSeconds prices with its NVLink leg, timed over the
// node's EP ranks by `nvl_leg(bytes)` (a Result<double>) when it has one.
template <class NvlLeg>
Result<double> LayerCollectiveSeconds(const parallelism::TpCollective& col, double comm_s,
                                      NvlLeg&& nvl_leg) {
  if (!col.flex) return comm_s;
  double nvl = 0;
  if (col.flex_nvl_bytes > 0) {
    Result<double> leg = nvl_leg(col.flex_nvl_bytes);
    if (!leg.ok()) return leg.status();
    nvl = *leg;
  }
  return FlexSeconds(comm_s, nvl);
}

// The members of `group` that share group[0]'s NVLink domain, group[0] first: the ranks the
// forwarding leg runs over.
inline std::vector<int> NvlinkPeers(const comm::Topology& topology, const std::vector<int>& group) {
  std::vector<int> peers;
  for (int g : group) {
    if (peers.empty() || comm::HopClassOf(topology, group.front(), g) == comm::HopClass::kNvlink) {
      peers.push_back(g);
    }
  }
  return peers;
}

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_FLEX_DISPATCH_H_
