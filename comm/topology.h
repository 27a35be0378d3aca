// comm::Topology — the links of a GPU cluster, and the path a transfer takes over them.
//
// Built from a TopologySpec of plain numbers (the scenario's cluster resolved against the
// hardware catalogue by scenarios/cluster_topology.h): per GPU an NVLink port to a non-blocking
// NVSwitch and a PCIe link, `nics_per_node` NICs per node, a two- or three-level fat tree
// (optionally rail-optimised) and PXN routing between rails. The model link by link, and the
// source of each efficiency: topology.cc and docs/collectives.md ("Topology").
//
// Units: each directed link has a bandwidth in bytes/s that a bulk transfer achieves (datasheet
// × the documented efficiency for that link type) and a latency; a path's latency is the sum.
// Errors: Build returns the ValidateTopologySpec message (field and valid range) for a bad spec.
// Invariants: a Topology is immutable after Build; LinkIds are dense in [0, num_links());
// Route(a, b) for a != b is non-empty and starts with a link leaving a's GPU and ends with one
// entering b's GPU; Route(a, a) is empty. Every route is deterministic.
#ifndef TRAINSIM_COMM_TOPOLOGY_H_
#define TRAINSIM_COMM_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::comm {

using LinkId = int32_t;

enum class LinkKind {
  kNvlinkUp,    // GPU → NVSwitch
  kNvlinkDown,  // NVSwitch → GPU
  kPcieUp,      // GPU → PCIe switch (host memory, NIC)
  kPcieDown,    // PCIe switch → GPU
  kNicTx,       // NIC → leaf switch
  kNicRx,       // leaf switch → NIC
  kLeafUp,      // leaf → spine (aggregated)
  kLeafDown,    // spine → leaf (aggregated)
  kSpineUp,     // spine (pod) → core (aggregated), three-level trees only
  kSpineDown,   // core → spine (pod)
};

const char* LinkKindName(LinkKind kind);

struct Link {
  LinkKind kind;
  double bandwidth_Bps = 0;  // achievable, bytes/s in this direction
  double datasheet_Bps = 0;  // the hardware figure it was derived from
  sim::Time latency;
  int owner = 0;  // GPU id (NVLink, PCIe), global NIC id (NIC links), leaf id, or pod id
};

// Plain-number description of a cluster. Defaults: a DGX H100 SuperPOD-like cluster of 16
// nodes (128 GPUs). Every figure's source is given where it is defined.
struct TopologySpec {
  int nodes = 16;
  int gpus_per_node = 8;
  // NVLink 4: 18 links × 25 GB/s = 450 GB/s per GPU per direction (H100 datasheet, "900 GB/s"
  // bidirectional).
  double nvlink_GBps = 450.0;
  // Physical latencies (wire + port): a GPU→GPU NVLink path crosses two links; a cross-node
  // path two PCIe links, two NIC links and one to three switches. NCCL's end-to-end hop latencies
  // (comm/nccl_model.h) are floors on top of these.
  double nvlink_latency_us = 0.25;
  int nics_per_node = 8;
  double nic_Gbps = 400.0;  // ConnectX-7 NDR InfiniBand, per NIC per direction
  // One-way small-message latency NIC to NIC through one leaf switch (ib_write_lat style, as
  // the catalogue gives it); split evenly between the two NIC links of a path.
  double nic_latency_us = 1.0;
  bool rail_optimized = true;
  int fat_tree_levels = 2;        // 2 (leaf–spine) or 3 (leaf–spine–core)
  int nodes_per_leaf = 32;        // DGX SuperPOD scalable unit: 32 nodes per rail leaf
  int leaves_per_pod = 8;         // three-level trees only: leaves (per rail) under one spine group
  double oversubscription = 1.0;  // leaf down-link bandwidth / up-link bandwidth
  double spine_oversubscription = 1.0;  // three-level trees only: spine down / up
  double switch_latency_us = 0.13;      // per extra switch (spine, core); Quantum-2 ~130 ns
  double pcie_GBps = 64.0;              // PCIe Gen5 x16, per direction
  double pcie_latency_us = 0.3;
  bool pxn = true;  // route via NVLink to the destination's rail first (NCCL PXN)
  // NVLink SHARP (NVLS): the NVSwitch reduces (multimem.ld_reduce) and multicasts
  // (multimem.st) — NVSwitch 3 and later, i.e. Hopper and Blackwell GPUs; A100's NVSwitch 2
  // cannot. Off in a bare spec so that it keeps modelling NCCL_NVLS_ENABLE=0;
  // scenarios::MakeTopologySpec turns it on by the GPU's architecture.
  bool nvls = false;
  // Fraction of the NVLink bandwidth NVLS traffic gets relative to the ring's: tuning.cc
  // nvlsEfficiency, Hopper 0.85, Blackwell 0.74 (applied on top of nvlink_efficiency).
  double nvls_efficiency = 0.85;
  // IB SHARP (CollNet): the fabric's switches reduce (scenario cluster.topology.sharp).
  bool sharp = false;
  // NCCL's ceiling on the LL protocol's bus bandwidth, GB/s (tuning.cc llMaxBws): inside one
  // node by GPU generation (Volta 39.0, Ampere 87.7, Hopper 141, Blackwell 282; set by
  // scenarios::MakeTopologySpec), across two nodes 39.0 and across three or more 20.4 with
  // Intel (or Arm) hosts — AMD hosts' row is 22.5 and 19.0; the catalogue does not say the CPU,
  // so Intel's row is used. NCCL prices Ring/LL at min(ceiling, busBw / 2) and Tree/LL at
  // min(ceiling, busBw / 3.8); the model applies the ceiling to both (comm/collective.cc).
  double ll_max_one_node_GBps = 141.0;
  double ll_max_two_nodes_GBps = 39.0;
  double ll_max_more_nodes_GBps = 20.4;

  // Achievable fraction of each link's datasheet bandwidth for bulk transfers.
  // NVLink through NVSwitch: nccl-tests ring all-reduce bus bandwidth inside one node is about
  // 0.77 of the per-direction NVLink figure on DGX A100 (≈230 of 300 GB/s) and 0.80–0.84 on DGX
  // H100 without NVLS (≈360–380 of 450 GB/s) (NVIDIA DGX performance pages, nccl-tests
  // reports); we take 0.80 for both generations. It covers NVLink packet headers and NCCL's
  // Simple-protocol flag/FIFO overhead.
  double nvlink_efficiency = 0.80;
  // Network: NCCL's tuning.cc models 12 GB/s of bus bandwidth per "100 Gb/s" of NIC speed,
  // i.e. 12 / 12.5 = 0.96 of line rate (InfiniBand headers at 4 KiB MTU).
  double nic_efficiency = 0.96;
  // PCIe Gen4/Gen5 x16 bulk DMA reaches about 80–85% of the raw rate after TLP/DLLP overhead
  // with 256-byte max payload (PCI-SIG encoding figures); 0.85.
  double pcie_efficiency = 0.85;
  // Leaf/spine up-links: fraction of their aggregate bandwidth that collective traffic can use
  // once they are loaded. 1.0 for InfiniBand (adaptive routing) and Ethernet with adaptive
  // routing; lower for an Ethernet fabric that places flows by ECMP hashing (see
  // scenarios::MakeTopologySpec and docs/collectives.md for the figures and their sources).
  double uplink_efficiency = 1.0;
};

// Checks the spec; the message names the field and what would be valid.
Status ValidateTopologySpec(const TopologySpec& spec);

class Topology {
 public:
  static Result<Topology> Build(const TopologySpec& spec);

  const TopologySpec& spec() const { return spec_; }
  int num_gpus() const { return spec_.nodes * spec_.gpus_per_node; }
  int num_nodes() const { return spec_.nodes; }
  int gpus_per_node() const { return spec_.gpus_per_node; }
  int node_of(int gpu) const { return gpu / spec_.gpus_per_node; }
  // Distinct nodes the GPUs `gpus` sit on.
  int NodesSpanned(const std::vector<int>& gpus) const;
  int local_index(int gpu) const { return gpu % spec_.gpus_per_node; }
  // The NIC index within its node that `gpu` uses (its rail when rail-optimised).
  int nic_of(int gpu) const;
  // Global NIC id: node · nics_per_node + local NIC index.
  int global_nic_of(int gpu) const { return node_of(gpu) * spec_.nics_per_node + nic_of(gpu); }

  // Directed links from src_gpu to dst_gpu (empty when equal). REQUIRES: valid GPU ids.
  std::vector<LinkId> Route(int src_gpu, int dst_gpu) const;
  // Same, appending to *out (cleared first) to avoid allocation in hot loops.
  void RouteInto(int src_gpu, int dst_gpu, std::vector<LinkId>* out) const;
  // GPU → host memory over PCIe (checkpoint snapshots).
  std::vector<LinkId> HostRoute(int gpu) const;
  // GPU → its NIC → leaf: the first hops of traffic to remote storage (the storage fabric
  // beyond the leaf is not modelled here) and of data sent to IB SHARP's switch reduction.
  std::vector<LinkId> NicEgressRoute(int gpu) const;

  int num_links() const { return static_cast<int>(links_.size()); }
  const Link& link(LinkId id) const { return links_[static_cast<size_t>(id)]; }
  // Sum of link latencies along a path.
  sim::Time PathLatency(const std::vector<LinkId>& path) const;
  // Smallest link bandwidth along a path (bytes/s); +inf for an empty path.
  double PathBandwidth(const std::vector<LinkId>& path) const;

  // Named link ids, for tests and fault injection.
  LinkId nvlink_up(int gpu) const { return nvl_up_[static_cast<size_t>(gpu)]; }
  LinkId nvlink_down(int gpu) const { return nvl_up_[static_cast<size_t>(gpu)] + 1; }
  LinkId pcie_up(int gpu) const { return pcie_up_[static_cast<size_t>(gpu)]; }
  LinkId pcie_down(int gpu) const { return pcie_up_[static_cast<size_t>(gpu)] + 1; }
  LinkId nic_tx(int global_nic) const { return nic_tx_[static_cast<size_t>(global_nic)]; }
  LinkId nic_rx(int global_nic) const { return nic_tx_[static_cast<size_t>(global_nic)] + 1; }
  int leaf_of_nic(int global_nic) const;
  LinkId leaf_up(int leaf) const { return leaf_up_[static_cast<size_t>(leaf)]; }
  LinkId leaf_down(int leaf) const { return leaf_up_[static_cast<size_t>(leaf)] + 1; }
  int num_leaves() const { return static_cast<int>(leaf_up_.size()); }

  // Human-readable description of a link ("nvl_up gpu 3", "leaf_up leaf 2").
  std::string LinkName(LinkId id) const;

 private:
  Topology() = default;
  LinkId AddLinkPair(LinkKind up, LinkKind down, double datasheet_Bps, double efficiency,
                     double latency_us, int owner);
  int pod_of_leaf(int leaf) const;

  TopologySpec spec_;
  std::vector<Link> links_;
  std::vector<LinkId> nvl_up_;   // per GPU; down = up + 1
  std::vector<LinkId> pcie_up_;  // per GPU; down = up + 1
  std::vector<LinkId> nic_tx_;   // per global NIC; rx = tx + 1
  std::vector<LinkId> leaf_up_;  // per leaf; down = up + 1
  std::vector<LinkId> pod_up_;   // per pod (three-level only); down = up + 1
  int leaves_per_group_ = 1;     // leaves serving one group of nodes_per_leaf nodes
};

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_TOPOLOGY_H_
