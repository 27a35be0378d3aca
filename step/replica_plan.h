// step/replica_plan.h — which data-parallel replicas a step simulation must run, and why.
//
// Replicas whose GPUs and links are all healthy behave identically, so one stands for all of
// them; every replica with a slowed GPU, a degraded GPU-side link (NVLink, PCIe, NIC) or a
// pipeline send routed across a degraded link is simulated too, and every replica when a
// switch link is degraded. A degraded GPU-side link of a TP rank other than 0 is applied to the
// same link of its TP rank 0, whose flows stand for the group's (the worst factor wins).
//
// Promises: validates the cluster state (InvalidArgument naming the GPU, link or factor);
// deterministic; replicas ascending.
#ifndef TRAINSIM_STEP_REPLICA_PLAN_H_
#define TRAINSIM_STEP_REPLICA_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "comm/topology.h"
#include "parallelism/layout.h"
#include "sim/status.h"
#include "step/step_simulation.h"

namespace trainsim::step {

struct ReplicaPlan {
  std::map<int, double> slowdown;              // GPU → factor ≥ 1 (the largest given)
  std::map<comm::LinkId, double> link_factor;  // the bandwidth factors the network applies
  std::vector<int> replicas;                   // DP indices to simulate, ascending
  int healthy_replica = 0;                     // stands for every replica not simulated
  double max_slowdown() const;
  // "simulated 2 of 16 data-parallel replicas (the other 14 are identical to replica 0; ...)"
  std::string Describe(int dp) const;
};

Result<ReplicaPlan> PlanReplicas(const comm::Topology& topo, const parallelism::Layout& layout,
                                 const ClusterState& state);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_REPLICA_PLAN_H_
