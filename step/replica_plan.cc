#include "step/replica_plan.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "step/step_state.h"

namespace trainsim::step {
namespace {

using parallelism::Layout;
using parallelism::RankCoord;

// The link of `kind` (NVLink, PCIe or NIC, either direction) that GPU `gpu` uses; -1 for a
// switch link, which no single GPU owns.
comm::LinkId GpuSideLink(const comm::Topology& topo, comm::LinkKind kind, int gpu) {
  switch (kind) {
    case comm::LinkKind::kNvlinkUp:
      return topo.nvlink_up(gpu);
    case comm::LinkKind::kNvlinkDown:
      return topo.nvlink_down(gpu);
    case comm::LinkKind::kPcieUp:
      return topo.pcie_up(gpu);
    case comm::LinkKind::kPcieDown:
      return topo.pcie_down(gpu);
    case comm::LinkKind::kNicTx:
      return topo.nic_tx(topo.global_nic_of(gpu));
    case comm::LinkKind::kNicRx:
      return topo.nic_rx(topo.global_nic_of(gpu));
    default:
      return -1;
  }
}

// The link factors the simulation applies (the worst per link): each degraded link, plus, for a
// GPU-side link of a GPU that is not its TP group's rank 0, the same link of rank 0. Adds the
// replicas such links touch to *replicas; a degraded switch link sets *all.
std::map<comm::LinkId, double> FoldLinkDegradations(const comm::Topology& topo,
                                                    const Layout& layout,
                                                    const std::vector<LinkDegradation>& links,
                                                    std::set<int>* replicas, bool* all) {
  std::map<comm::LinkId, double> factor;
  auto degrade = [&](comm::LinkId l, double f) {
    auto [it, fresh] = factor.emplace(l, f);
    if (!fresh) it->second = std::min(it->second, f);
  };
  const int nics = topo.spec().nics_per_node;
  for (const LinkDegradation& d : links) {
    degrade(d.link, d.bandwidth_factor);
    const comm::Link& link = topo.link(d.link);
    std::vector<int> gpus;  // the GPUs whose traffic uses the link
    switch (link.kind) {
      case comm::LinkKind::kNvlinkUp:
      case comm::LinkKind::kNvlinkDown:
      case comm::LinkKind::kPcieUp:
      case comm::LinkKind::kPcieDown:
        gpus.push_back(link.owner);
        break;
      case comm::LinkKind::kNicTx:
      case comm::LinkKind::kNicRx: {
        const int node = link.owner / nics, first = node * topo.gpus_per_node();
        for (int g = first; g < first + topo.gpus_per_node(); ++g) {
          if (topo.global_nic_of(g) == link.owner) gpus.push_back(g);
        }
        break;
      }
      default:
        *all = true;
        break;
    }
    for (int g : gpus) {
      if (g >= layout.num_gpus()) continue;  // a spare: no job traffic
      const RankCoord rc = layout.CoordOf(g);
      replicas->insert(rc.dp);
      degrade(GpuSideLink(topo, link.kind, layout.GpuOf({0, rc.pp, rc.dp})), d.bandwidth_factor);
    }
  }
  return factor;
}

}  // namespace

double ReplicaPlan::max_slowdown() const {
  double max_slow = 1;
  for (const auto& [gpu, f] : slowdown) max_slow = std::max(max_slow, f);
  return max_slow;
}

std::string ReplicaPlan::Describe(int dp) const {
  std::string note = "simulated " + std::to_string(replicas.size()) + " of " + std::to_string(dp) +
                     " data-parallel replicas";
  if (int(replicas.size()) < dp) {
    const int others = dp - int(replicas.size());
    std::string others_text = " (the other one is";
    if (others > 1) {
      others_text = " (the other ";
      others_text.append(std::to_string(others)).append(" are");
    }
    note += others_text;
    note += " identical to replica " + std::to_string(healthy_replica) +
            "; the data-parallel collectives span every replica)";
  }
  return note;
}

Result<ReplicaPlan> PlanReplicas(const comm::Topology& topo, const Layout& layout,
                                 const ClusterState& state) {
  ReplicaPlan plan;
  for (const auto& [gpu, factor] : state.gpu_slowdown) {
    if (gpu < 0 || gpu >= layout.num_gpus()) {
      return Status::InvalidArgument("slowed GPU " + std::to_string(gpu) + " is not in the job");
    }
    if (!(factor >= 1.0) || !(factor <= 1e6)) {
      return Status::InvalidArgument("GPU slowdown factor must be between 1 and 1e6 (got " +
                                     FormatNumber("%g", factor) + ")");
    }
    plan.slowdown[gpu] = std::max(plan.slowdown[gpu], factor);
  }
  for (const LinkDegradation& d : state.links) {
    if (d.link < 0 || d.link >= topo.num_links()) {
      return Status::InvalidArgument("degraded link " + std::to_string(d.link) + " does not exist");
    }
    if (!(d.bandwidth_factor >= 0) || !std::isfinite(d.bandwidth_factor)) {
      return Status::InvalidArgument("link bandwidth factor must be >= 0");
    }
  }

  const parallelism::ParallelConfig& c = layout.config();
  std::set<int> distinct;  // replicas that differ from the healthy ones
  for (const auto& [gpu, f] : plan.slowdown) {
    if (f > 1.0) distinct.insert(layout.CoordOf(gpu).dp);
  }
  bool all_replicas = false;
  plan.link_factor = FoldLinkDegradations(topo, layout, state.links, &distinct, &all_replicas);
  if (!plan.link_factor.empty() && !all_replicas && c.pp > 1) {
    // A replica whose pipeline sends cross a degraded link differs too, even when no GPU of it
    // owns the link: with PXN a cross-rail send leaves through another GPU's NIC.
    std::vector<comm::LinkId> path;
    auto crosses = [&](int a, int b) {
      topo.RouteInto(a, b, &path);
      for (comm::LinkId l : path) {
        auto it = plan.link_factor.find(l);
        if (it != plan.link_factor.end() && it->second < 1.0) return true;
      }
      return false;
    };
    for (int d = 0; d < c.dp; ++d) {
      if (distinct.count(d)) continue;
      for (int s = 0; s + 1 < c.pp; ++s) {
        const int a = layout.GpuOf({0, s, d}), b = layout.GpuOf({0, s + 1, d});
        if (crosses(a, b) || crosses(b, a)) {
          distinct.insert(d);
          break;
        }
      }
    }
  }
  if (all_replicas) {
    for (int d = 0; d < c.dp; ++d) plan.replicas.push_back(d);
  } else {
    for (int d = 0; d < c.dp; ++d) {
      if (!distinct.count(d)) {
        plan.replicas.push_back(d);
        break;
      }
    }
    for (int d : distinct) plan.replicas.push_back(d);
    std::sort(plan.replicas.begin(), plan.replicas.end());
  }
  plan.healthy_replica = plan.replicas.front();
  for (int d : plan.replicas) {
    if (!distinct.count(d)) {
      plan.healthy_replica = d;
      break;
    }
  }
  return plan;
}

}  // namespace trainsim::step
