// scenarios/step_config.h — a resolved scenario turned into the step simulation's config.
//
// What it is: the bridge from the protobuf scenario (scenarios/scenario.proto, resolved against
// the hardware catalogue) to step::StepConfig's plain structs, so parallelism/ never sees
// protobuf. The GPU's peak is the catalogue's dense tensor-core figure at the model's
// precision; the SM count comes from the architecture (A100 108, H100/H200 132, B200 148:
// NVIDIA architecture whitepapers); the network from the node's NICs and the NIC's switch.
//
// Promises: every field of StepConfig is derived from the scenario or documented here; no
// efficiency parameter is set per scenario (ComputeParams keeps its documented defaults).
// StepConfig::calibration stays null: the command loads cluster.calibration or --calibration
// (cli::LoadScenarioCalibration, which checks the GPU) and attaches it; gemm_dtype is set from
// the model's precision (bf16, fp16, fp8; "tf32" matches no calibration row).
#ifndef TRAINSIM_SCENARIOS_STEP_CONFIG_H_
#define TRAINSIM_SCENARIOS_STEP_CONFIG_H_

#include <string>
#include <vector>

#include "comm/topology.h"
#include "scenarios/scenario.h"
#include "sim/status.h"
#include "step/step_simulation.h"

namespace trainsim::scenarios {

// The cluster's network as comm/ models it.
comm::TopologySpec MakeTopologySpec(const ResolvedScenario& r);

// The step simulation's configuration (model, layout, GPU, network).
Result<step::StepConfig> MakeStepConfig(const ResolvedScenario& r);

// cluster.memory_headroom (or --memory-headroom) in bytes for a GPU of `hbm_bytes`: a fraction
// of HBM ("0.05"), a percentage ("5%") or a size ("4GB", "4GiB"); "" = `fallback_fraction` of
// HBM. InvalidArgument names the field and the forms accepted.
Result<double> MemoryHeadroomBytes(const std::string& text, double hbm_bytes,
                                   double fallback_fraction = 0);

// The model's shape as the closed-form models take it (MakeStepConfig's `model`).
parallelism::ModelSpec MakeModelSpec(const pb::Model& model);

// The cluster state during a step with every STRAGGLER fault of the scenario active and every
// degraded LINK fault applied (bandwidth factor 1 − degrade); empty when there are none. A LINK
// that is down (degrade 1, the default) is left out: its node leaves the job in the run.
step::ClusterState MakeFaultedClusterState(const ResolvedScenario& r);

// One row of `trainsim validate`: a scenario in scenarios/validation/ with a published value.
struct ValidationRow {
  std::string scenario;
  std::string source;  // the table the row belongs to (published.source); MAPE is per source
  // "tokens_per_sec_per_gpu", "tflops_per_gpu" or "iteration_time_s"
  std::string metric;
  double predicted = 0;
  double published = 0;
  double error = 0;  // predicted / published − 1
  int micro_batch = 0;
  bool micro_batch_searched = false;
  double step_time_s = 0;
  double mfu = 0;
  // Model TFLOP/s per GPU in Megatron-Core's count (parallelism::MegatronModelFlopsPerIteration
  // over step time and GPUs), shown where published.csv gives the published figure (else 0).
  double model_tflops_predicted = 0;
  double model_tflops_published = 0;
  // The memory model's verdict on the published layout. A row whose micro-batch is published
  // ran on real hardware, so it is timed even when the model says it does not fit (the row
  // then reports the memory model's overestimate rather than failing).
  bool memory_fits = true;
  double peak_memory_gb = 0;
  step::StepBreakdown breakdown;  // of the report GPU (the step's critical stage)
};

// Runs every *.textproto in `dir` (sorted by name) that has a published value, with `sets`
// (--set overrides) applied to each. DIR/published.csv (columns scenario,
// micro_batch_published[, tokens_per_sec_per_gpu, model_tflops_per_sec_per_gpu]) says which
// rows do not publish their micro-batch (run with the fastest of 1, 2, 4, 8 that is valid and
// fits; the others as written) and holds the Megatron-Bridge throughput figures, which the
// scenario proto has no field for. Metric, first published of: tokens/s per GPU (global batch ·
// seq / (step time · GPUs)), TFLOP/s per GPU (hardware FLOPs, Narayanan's convention), the
// iteration time. `threads` (≥ 1) simulate rows side by side; the rows are the same as one
// thread's, in file order.
Result<std::vector<ValidationRow>> RunValidation(const std::string& dir,
                                                 const std::vector<std::string>& sets,
                                                 int threads = 1);

}  // namespace trainsim::scenarios

#endif  // TRAINSIM_SCENARIOS_STEP_CONFIG_H_
