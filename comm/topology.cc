// The cluster model behind comm::Topology (its contract is in topology.h).
//
// The model:
//   - inside a node, every GPU has one NVLink port to the NVSwitch fabric (DGX-style), modelled
//     as two directed links (GPU→switch "nvl_up", switch→GPU "nvl_down") of the per-GPU,
//     per-direction NVLink bandwidth; the switch itself is non-blocking;
//   - every GPU has a PCIe link (up = GPU→host/NIC side, down = the reverse) used by checkpoint
//     traffic to host memory and by GPUDirect RDMA to the NIC;
//   - NICs: `nics_per_node` per node; GPU g uses NIC floor(local(g)·nics/gpus) (one per GPU when
//     the counts match, "rail-optimised"; one per node when nics_per_node = 1);
//   - a two- or three-level fat tree. Leaves: with rail_optimized, NIC k of a group of
//     `nodes_per_leaf` nodes attaches to the rail-k leaf of that group; otherwise all NICs of the
//     group attach to one leaf. Each leaf's up-links to the spine layer are one aggregated link
//     per direction of (down-link bandwidth sum) / oversubscription (flow-level ECMP: traffic is
//     assumed spread evenly over the parallel up-links). With three levels, `leaves_per_pod`
//     leaves form a pod whose spine→core up-links are aggregated the same way (non-blocking
//     above the spine unless spine_oversubscription says otherwise).
//   - PXN (NCCL's default since 2.12, NCCL_PXN_DISABLE=0): a transfer between nodes whose source
//     GPU's NIC is on a different rail than the destination's first moves over NVLink to the
//     local GPU on the destination's rail, so rail-optimised traffic stays below the leaf.

#include "comm/topology.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace trainsim::comm {

const char* LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvlinkUp:
      return "nvl_up";
    case LinkKind::kNvlinkDown:
      return "nvl_down";
    case LinkKind::kPcieUp:
      return "pcie_up";
    case LinkKind::kPcieDown:
      return "pcie_down";
    case LinkKind::kNicTx:
      return "nic_tx";
    case LinkKind::kNicRx:
      return "nic_rx";
    case LinkKind::kLeafUp:
      return "leaf_up";
    case LinkKind::kLeafDown:
      return "leaf_down";
    case LinkKind::kSpineUp:
      return "spine_up";
    case LinkKind::kSpineDown:
      return "spine_down";
  }
  return "?";
}

namespace {

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }
bool NonNegativeFinite(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

Status ValidateTopologySpec(const TopologySpec& s) {
  if (s.nodes < 1 || s.nodes > 1000000) {
    return Status::InvalidArgument("nodes must be between 1 and 1000000, got " +
                                   std::to_string(s.nodes));
  }
  if (s.gpus_per_node < 1 || s.gpus_per_node > 1024) {
    return Status::InvalidArgument("gpus_per_node must be between 1 and 1024, got " +
                                   std::to_string(s.gpus_per_node));
  }
  if (static_cast<int64_t>(s.nodes) * s.gpus_per_node > (int64_t{1} << 24)) {
    return Status::InvalidArgument("cluster too large: at most 16777216 GPUs are supported");
  }
  if (s.nics_per_node < 1 || s.nics_per_node > s.gpus_per_node) {
    return Status::InvalidArgument("nics_per_node must be between 1 and gpus_per_node (" +
                                   std::to_string(s.gpus_per_node) + "), got " +
                                   std::to_string(s.nics_per_node));
  }
  if (!PositiveFinite(s.nvlink_GBps)) {
    return Status::InvalidArgument("nvlink_GBps must be > 0");
  }
  if (!PositiveFinite(s.nic_Gbps)) return Status::InvalidArgument("nic_Gbps must be > 0");
  if (!PositiveFinite(s.pcie_GBps)) return Status::InvalidArgument("pcie_GBps must be > 0");
  if (!NonNegativeFinite(s.nvlink_latency_us) || !NonNegativeFinite(s.nic_latency_us) ||
      !NonNegativeFinite(s.switch_latency_us) || !NonNegativeFinite(s.pcie_latency_us)) {
    return Status::InvalidArgument("latencies (nvlink, nic, switch, pcie) must be >= 0 us");
  }
  if (s.fat_tree_levels != 2 && s.fat_tree_levels != 3) {
    return Status::InvalidArgument("fat_tree_levels must be 2 or 3, got " +
                                   std::to_string(s.fat_tree_levels));
  }
  if (s.nodes_per_leaf < 1) {
    return Status::InvalidArgument("nodes_per_leaf must be >= 1, got " +
                                   std::to_string(s.nodes_per_leaf));
  }
  if (s.leaves_per_pod < 1) {
    return Status::InvalidArgument("leaves_per_pod must be >= 1, got " +
                                   std::to_string(s.leaves_per_pod));
  }
  if (!std::isfinite(s.oversubscription) || s.oversubscription < 1.0 ||
      !std::isfinite(s.spine_oversubscription) || s.spine_oversubscription < 1.0) {
    return Status::InvalidArgument(
        "oversubscription must be >= 1.0 (1.0 = non-blocking; 2.0 = half the up-link "
        "bandwidth)");
  }
  if (!PositiveFinite(s.ll_max_one_node_GBps) || !PositiveFinite(s.ll_max_two_nodes_GBps) ||
      !PositiveFinite(s.ll_max_more_nodes_GBps)) {
    return Status::InvalidArgument("the LL bandwidth ceilings (ll_max_*_GBps) must be > 0");
  }
  for (double e : {s.nvlink_efficiency, s.nic_efficiency, s.pcie_efficiency, s.nvls_efficiency,
                   s.uplink_efficiency}) {
    if (!std::isfinite(e) || e <= 0 || e > 1) {
      return Status::InvalidArgument("link efficiencies must be in (0, 1]");
    }
  }
  return Status::Ok();
}

LinkId Topology::AddLinkPair(LinkKind up, LinkKind down, double datasheet_Bps, double efficiency,
                             double latency_us, int owner) {
  const LinkId id = static_cast<LinkId>(links_.size());
  const sim::Time latency = sim::Time::FromSeconds(latency_us * 1e-6);
  links_.push_back(Link{up, datasheet_Bps * efficiency, datasheet_Bps, latency, owner});
  links_.push_back(Link{down, datasheet_Bps * efficiency, datasheet_Bps, latency, owner});
  return id;
}

Result<Topology> Topology::Build(const TopologySpec& spec) {
  TRAINSIM_RETURN_IF_ERROR(ValidateTopologySpec(spec));
  Topology t;
  t.spec_ = spec;
  const int gpus = spec.nodes * spec.gpus_per_node;
  t.nvl_up_.resize(static_cast<size_t>(gpus));
  t.pcie_up_.resize(static_cast<size_t>(gpus));
  for (int g = 0; g < gpus; ++g) {
    t.nvl_up_[static_cast<size_t>(g)] =
        t.AddLinkPair(LinkKind::kNvlinkUp, LinkKind::kNvlinkDown, spec.nvlink_GBps * 1e9,
                      spec.nvlink_efficiency, spec.nvlink_latency_us, g);
  }
  for (int g = 0; g < gpus; ++g) {
    t.pcie_up_[static_cast<size_t>(g)] =
        t.AddLinkPair(LinkKind::kPcieUp, LinkKind::kPcieDown, spec.pcie_GBps * 1e9,
                      spec.pcie_efficiency, spec.pcie_latency_us, g);
  }
  const int nics = spec.nodes * spec.nics_per_node;
  const double nic_Bps = spec.nic_Gbps * 1e9 / 8.0;
  t.nic_tx_.resize(static_cast<size_t>(nics));
  for (int n = 0; n < nics; ++n) {
    // nic_latency_us is NIC to NIC through one leaf: half on each NIC link of a path.
    t.nic_tx_[static_cast<size_t>(n)] =
        t.AddLinkPair(LinkKind::kNicTx, LinkKind::kNicRx, nic_Bps, spec.nic_efficiency,
                      spec.nic_latency_us / 2, n);
  }
  // Leaves: one group of leaves per nodes_per_leaf nodes; rail-optimised groups have one leaf
  // per rail.
  t.leaves_per_group_ = spec.rail_optimized ? spec.nics_per_node : 1;
  const int groups = (spec.nodes + spec.nodes_per_leaf - 1) / spec.nodes_per_leaf;
  const int leaves = groups * t.leaves_per_group_;
  t.leaf_up_.resize(static_cast<size_t>(leaves));
  for (int l = 0; l < leaves; ++l) {
    const int group = l / t.leaves_per_group_;
    const int nodes_in_group =
        std::min(spec.nodes_per_leaf, spec.nodes - group * spec.nodes_per_leaf);
    const int down_ports = nodes_in_group * (spec.rail_optimized ? 1 : spec.nics_per_node);
    // Aggregated up-link: the leaf's down-link bandwidth divided by the oversubscription ratio.
    const double up_Bps = down_ports * nic_Bps / spec.oversubscription;
    t.leaf_up_[static_cast<size_t>(l)] =
        t.AddLinkPair(LinkKind::kLeafUp, LinkKind::kLeafDown, up_Bps,
                      spec.nic_efficiency * spec.uplink_efficiency, spec.switch_latency_us, l);
  }
  if (spec.fat_tree_levels == 3) {
    // A pod: leaves_per_pod leaves of one rail (or of the whole group when not rail-optimised)
    // under one spine group. Pods are numbered by (leaf group block, rail).
    const int pods = t.pod_of_leaf(leaves - 1) + 1;
    t.pod_up_.resize(static_cast<size_t>(pods));
    std::vector<double> pod_down_Bps(static_cast<size_t>(pods), 0.0);
    for (int l = 0; l < leaves; ++l) {
      pod_down_Bps[static_cast<size_t>(t.pod_of_leaf(l))] +=
          t.links_[static_cast<size_t>(t.leaf_up_[static_cast<size_t>(l)])].datasheet_Bps;
    }
    for (int p = 0; p < pods; ++p) {
      t.pod_up_[static_cast<size_t>(p)] =
          t.AddLinkPair(LinkKind::kSpineUp, LinkKind::kSpineDown,
                        pod_down_Bps[static_cast<size_t>(p)] / spec.spine_oversubscription,
                        spec.nic_efficiency * spec.uplink_efficiency, spec.switch_latency_us, p);
    }
  }
  return t;
}

int Topology::NodesSpanned(const std::vector<int>& gpus) const {
  std::vector<int> nodes;
  nodes.reserve(gpus.size());
  for (int g : gpus) nodes.push_back(node_of(g));
  std::sort(nodes.begin(), nodes.end());
  return int(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
}

int Topology::nic_of(int gpu) const {
  // Spread GPUs evenly over the node's NICs: GPU l uses NIC floor(l · nics / gpus).
  return static_cast<int>(static_cast<int64_t>(local_index(gpu)) * spec_.nics_per_node /
                          spec_.gpus_per_node);
}

int Topology::leaf_of_nic(int global_nic) const {
  const int node = global_nic / spec_.nics_per_node;
  const int local_nic = global_nic % spec_.nics_per_node;
  const int group = node / spec_.nodes_per_leaf;
  return group * leaves_per_group_ + (spec_.rail_optimized ? local_nic : 0);
}

int Topology::pod_of_leaf(int leaf) const {
  const int group = leaf / leaves_per_group_;
  const int rail = leaf % leaves_per_group_;
  const int block = group / spec_.leaves_per_pod;
  return block * leaves_per_group_ + rail;
}

void Topology::RouteInto(int src, int dst, std::vector<LinkId>* out) const {
  out->clear();
  if (src == dst) return;
  const int src_node = node_of(src);
  const int dst_node = node_of(dst);
  if (src_node == dst_node) {
    out->push_back(nvlink_up(src));
    out->push_back(nvlink_down(dst));
    return;
  }
  int egress_gpu = src;
  if (spec_.pxn && spec_.rail_optimized && nic_of(src) != nic_of(dst)) {
    // PXN: hand the data over NVLink to the first local GPU on the destination's rail.
    const int first_local = src_node * spec_.gpus_per_node;
    for (int l = 0; l < spec_.gpus_per_node; ++l) {
      if (nic_of(first_local + l) == nic_of(dst)) {
        egress_gpu = first_local + l;
        break;
      }
    }
    if (egress_gpu != src) {
      out->push_back(nvlink_up(src));
      out->push_back(nvlink_down(egress_gpu));
    }
  }
  const int src_nic = src_node * spec_.nics_per_node + nic_of(egress_gpu);
  const int dst_nic = global_nic_of(dst);
  out->push_back(pcie_up(egress_gpu));
  out->push_back(nic_tx(src_nic));
  const int src_leaf = leaf_of_nic(src_nic);
  const int dst_leaf = leaf_of_nic(dst_nic);
  if (src_leaf != dst_leaf) {
    out->push_back(leaf_up(src_leaf));
    if (spec_.fat_tree_levels == 3) {
      const int src_pod = pod_of_leaf(src_leaf);
      const int dst_pod = pod_of_leaf(dst_leaf);
      if (src_pod != dst_pod) {
        out->push_back(pod_up_[static_cast<size_t>(src_pod)]);
        out->push_back(pod_up_[static_cast<size_t>(dst_pod)] + 1);
      }
    }
    out->push_back(leaf_down(dst_leaf));
  }
  out->push_back(nic_rx(dst_nic));
  out->push_back(pcie_down(dst));
}

std::vector<LinkId> Topology::Route(int src, int dst) const {
  std::vector<LinkId> path;
  RouteInto(src, dst, &path);
  return path;
}

std::vector<LinkId> Topology::HostRoute(int gpu) const { return {pcie_up(gpu)}; }

std::vector<LinkId> Topology::NicEgressRoute(int gpu) const {
  return {pcie_up(gpu), nic_tx(global_nic_of(gpu))};
}

sim::Time Topology::PathLatency(const std::vector<LinkId>& path) const {
  sim::Time total;
  for (LinkId id : path) total += link(id).latency;
  return total;
}

double Topology::PathBandwidth(const std::vector<LinkId>& path) const {
  double bw = std::numeric_limits<double>::infinity();
  for (LinkId id : path) bw = std::min(bw, link(id).bandwidth_Bps);
  return bw;
}

std::string Topology::LinkName(LinkId id) const {
  const Link& l = link(id);
  std::string owner;
  switch (l.kind) {
    case LinkKind::kNvlinkUp:
    case LinkKind::kNvlinkDown:
    case LinkKind::kPcieUp:
    case LinkKind::kPcieDown:
      owner = " gpu " + std::to_string(l.owner);
      break;
    case LinkKind::kNicTx:
    case LinkKind::kNicRx:
      owner = " nic " + std::to_string(l.owner);
      break;
    case LinkKind::kLeafUp:
    case LinkKind::kLeafDown:
      owner = " leaf " + std::to_string(l.owner);
      break;
    case LinkKind::kSpineUp:
    case LinkKind::kSpineDown:
      owner = " pod " + std::to_string(l.owner);
      break;
  }
  return std::string(LinkKindName(l.kind)) + owner;
}

}  // namespace trainsim::comm
