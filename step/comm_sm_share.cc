#include "step/comm_sm_share.h"

#include <algorithm>

namespace trainsim::step {
namespace {

using parallelism::GpuArch;

// Channels of a communicator before any size-based reduction (comm->nChannels).
// One node: NCCL's ring search finds up to MAXCHANNELS/2 = 16 channels over NVLink and runs
// twice its search channels ("execution channels are typically 2x the search channels",
// sjeaugey, NVIDIA/nccl#1041), capped at 32 (MAXCHANNELS through NCCL 2.22). Ampere's 12
// NVLink3 links give 24 (NVIDIA/nccl#652: "24 would have been the number of channels needed for
// intra-node bandwidth" on A100); Hopper's and Blackwell's 18 links to the NVSwitch (AddyLaddy,
// NVIDIA/nccl#1429) give the cap, 32. Several nodes: a search channel per NIC, doubled (a
// 3-node DGX H100 with 8 NICs logs "Channel 00/16", NVIDIA/nccl#1453).
int CollChannels(GpuArch arch, int nodes, int nics_per_node) {
  if (nodes <= 1) return arch == GpuArch::kAmpere ? 24 : 32;
  return std::clamp(2 * nics_per_node, 2, 32);
}

// NVLS and NVLS-tree: NCCL_NVLS_NCHANNELS, default 16 (src/transport/nvls.cc; "NVLS should not
// need more than 16 channels to get peak BW", NVIDIA/nccl#1041).
constexpr int kNvlsChannels = 16;

// A send/recv to a peer over the network: NCCL_NCHANNELS_PER_NET_PEER, default 2 (src/init.cc).
constexpr int kNetPeerChannels = 2;

// enqueue.cc (topoGetAlgoInfo): for ring and tree NCCL drops channels while the per-rank
// buffer is below nc × nThreads × threadThreshold. Threads per CTA: NCCL_SIMPLE_MAX_NTHREADS =
// NCCL_LL_MAX_NTHREADS = 512, NCCL_LL128_MAX_NTHREADS = 640; thresholds (tuning.cc):
// NCCL_SIMPLE_THREAD_THRESHOLD 64, NCCL_LL_THREAD_THRESHOLD 8 (× ranks for Ring/LL),
// NCCL_LL128_THREAD_THRESHOLD 8 bytes per thread.
int ShrinkForSize(int nc, const NcclCollectiveShape& s) {
  double per_rank = s.bytes;
  if (s.op == comm::Op::kAllGather || s.op == comm::Op::kReduceScatter) {
    per_rank /= std::max(1, s.ranks);
  }
  double threads = 512, threshold = 64;
  if (s.protocol == comm::Protocol::kLL128) {
    threads = 640;
    threshold = 8;
  } else if (s.protocol == comm::Protocol::kLL) {
    threshold = s.algo == comm::Algo::kRing ? 8.0 * s.ranks : 8.0;
  }
  while (nc > 1 && per_rank < nc * threads * threshold) --nc;
  return nc;
}

int Clamp(int nc, const NcclCtaLimits& limits) {
  if (limits.min_ctas > 0) nc = std::max(nc, limits.min_ctas);
  if (limits.max_ctas > 0) nc = std::min(nc, limits.max_ctas);
  return std::max(1, nc);
}

}  // namespace

int NcclCollectiveCtas(const NcclCollectiveShape& s, const NcclCtaLimits& limits) {
  const int coll = Clamp(CollChannels(s.arch, s.nodes, s.nics_per_node), limits);
  switch (s.algo) {
    case comm::Algo::kNvls:
    case comm::Algo::kNvlsTree:
      return Clamp(kNvlsChannels, limits);
    case comm::Algo::kCollNet:  // CollNet Direct runs on the collective channels ("32 collnet
      return coll;              // channels" beside "32 coll channels" in NCCL's init log)
    default:
      break;
  }
  // All-to-all is grouped send/recv over all of NCCL's p2p channels, as many as its collective
  // channels ("16 coll channels, ... 16 p2p channels" in NVIDIA/nccl#892's log); it is not
  // shrunk by size.
  if (s.op == comm::Op::kAllToAll) return coll;
  return Clamp(ShrinkForSize(coll, s), {0, limits.max_ctas});
}

int NcclP2pCtas(GpuArch arch, bool inter_node, int nics_per_node, const NcclCtaLimits& limits) {
  // On NVLink a peer gets every p2p channel ("16 p2p channels per peer", NVIDIA/nccl#892).
  if (!inter_node) return Clamp(CollChannels(arch, 1, nics_per_node), limits);
  return Clamp(kNetPeerChannels, {0, limits.max_ctas});
}

OverlapCost OverlapBeside(double comm_s, double compute_s, double share) {
  OverlapCost o;
  if (comm_s <= 0 || compute_s <= 0) {
    o.exposed = std::max(0.0, comm_s);
    return o;
  }
  // Until the collective ends the compute advances at (1 − share); it ends at compute_s /
  // (1 − share) if the collective is still running then, else compute_s + share · comm_s.
  const double stretched =
      compute_s + share * std::min(comm_s, compute_s / (1 - std::min(share, 0.999)));
  o.slowed = stretched - compute_s;
  o.exposed = std::max(0.0, comm_s - stretched);
  return o;
}

double SmShare(int ctas, int sms) {
  if (sms <= 1 || ctas <= 0) return 0;
  return std::min(double(ctas), double(sms - 1)) / sms;
}

}  // namespace trainsim::step
