// step/comm_sm_share.h — the streaming multiprocessors an NCCL collective takes from the compute
// it runs beside, and what that costs the compute.
//
// NCCL runs a collective as one kernel with one CTA (thread block) per channel, each CTA
// resident on its own SM for the kernel's whole life (NCCL's device code loops over its chunks;
// "Demystifying NCCL", arXiv 2507.04786, §3). While it runs, the kernels it overlaps have the
// other SMs: they run at (1 − s) of their rate, s = CTAs / SMs. The channel counts below are
// NCCL's defaults as its topology search and enqueue logic produce them (sources at each
// constant); NcclCtaLimits stands for NCCL_MIN/MAX_NCHANNELS (NCCL_MIN/MAX_CTAS).
// Contract: deterministic; every result ≥ 1 CTA; SmShare in [0, 1).
// Not modelled: the HBM bandwidth the collective's copies and reductions take (its traffic is
// the network's rate × a few, small beside HBM for inter-node groups, and the GEMMs these
// kernels slow are compute-bound; docs/step-simulation.md).
#ifndef TRAINSIM_STEP_COMM_SM_SHARE_H_
#define TRAINSIM_STEP_COMM_SM_SHARE_H_

#include "comm/collective.h"
#include "parallelism/compute.h"

namespace trainsim::step {

// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (or NCCL_MIN_CTAS / NCCL_MAX_CTAS) as the scenario
// sets them (parallelism.nccl_min_ctas / nccl_max_ctas); 0 = NCCL's default.
struct NcclCtaLimits {
  int min_ctas = 0;
  int max_ctas = 0;
};

// NCCL's upper bound on channels per communicator (MAXCHANNELS in src/include/device.h: 32
// through NCCL 2.22, 64 since; the scenario field may ask for up to that).
inline constexpr int kNcclMaxChannels = 64;

// What decides a collective's channel count.
struct NcclCollectiveShape {
  parallelism::GpuArch arch = parallelism::GpuArch::kAmpere;
  comm::Op op = comm::Op::kAllReduce;
  comm::Algo algo = comm::Algo::kRing;  // what comm's tuner picked (never kAuto)
  comm::Protocol protocol = comm::Protocol::kSimple;
  int ranks = 2;
  int nodes = 1;          // nodes the group spans
  int nics_per_node = 8;  // the topology's NICs per node
  double bytes = 0;       // comm's unit (comm/collective.h: the gathered buffer for AG/RS)
};

// CTAs (channels) NCCL launches for the collective.
int NcclCollectiveCtas(const NcclCollectiveShape& shape, const NcclCtaLimits& limits);

// CTAs of a send/recv between two ranks (the context-parallel ring's K/V exchange) on the same
// node or across nodes.
int NcclP2pCtas(parallelism::GpuArch arch, bool inter_node, int nics_per_node,
                const NcclCtaLimits& limits);

// SMs the FLEX dispatcher's kernels take: `configured` when > 0 (--moe-flex-dispatcher-num-sms),
// else HybridEP's default (DeepEP hybrid-ep, csrc/hybrid_ep/config.cuh: 24 blocks for dispatch
// and combine inside one NVLink domain, 8 across nodes).
inline int FlexSms(int configured, int ep_nodes) {
  if (configured > 0) return configured;
  return ep_nodes > 1 ? 8 : 24;
}

// The share of the GPU's SMs that `ctas` CTAs occupy, at most (sms − 1) / sms: the compute
// keeps at least one SM (the hardware schedules its CTAs as the collective's leave none free).
double SmShare(int ctas, int sms);

// A collective of `comm_s` seconds (its time on the network, which the SMs do not change) run
// beside compute of `compute_s` seconds at full rate, taking `share` of the SMs: the compute
// runs at (1 − share) while the collective runs and at full rate after it. `slowed` is what the
// compute gains, `exposed` what the collective outlasts the slowed compute by.
struct OverlapCost {
  double slowed = 0, exposed = 0;
};
OverlapCost OverlapBeside(double comm_s, double compute_s, double share);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_COMM_SM_SHARE_H_
