// scenarios/step_config.h — a resolved scenario turned into the step simulation's config.
//
// What it is: the bridge from the protobuf scenario (scenarios/scenario.proto, resolved against
// the hardware catalogue) to parallelism::StepConfig's plain structs, so parallelism/ never sees
// protobuf. The GPU's peak is the catalogue's dense tensor-core figure at the model's
// precision; the SM count comes from the architecture (A100 108, H100/H200 132, B200 148:
// NVIDIA architecture whitepapers); the network from the node's NICs and the NIC's switch.
//
// Promises: every field of StepConfig is derived from the scenario or documented here; no
// efficiency parameter is set per scenario (ComputeParams keeps its documented defaults).
#ifndef TRAINSIM_SCENARIOS_STEP_CONFIG_H_
#define TRAINSIM_SCENARIOS_STEP_CONFIG_H_

#include "comm/topology.h"
#include "parallelism/step_simulation.h"
#include "scenarios/scenario.h"
#include "sim/status.h"

namespace trainsim::scenarios {

// The cluster's network as comm/ models it.
comm::TopologySpec MakeTopologySpec(const ResolvedScenario& r);

// The step simulation's configuration (model, layout, GPU, network).
Result<parallelism::StepConfig> MakeStepConfig(const ResolvedScenario& r);

// The cluster state during a step with every STRAGGLER fault of the scenario active and every
// LINK fault applied (degrade factor, 0 when down); empty when there are none.
parallelism::ClusterState MakeFaultedClusterState(const ResolvedScenario& r);

}  // namespace trainsim::scenarios

#endif  // TRAINSIM_SCENARIOS_STEP_CONFIG_H_
