// parallelism/step_simulation.h — one training iteration, operation by operation, on the engine.
//
// What it is: every pipeline stage of the simulated data-parallel replica(s) runs its schedule
// (parallelism/schedule.h) on the discrete-event engine. A task (the forward or backward of one
// model chunk for one micro-batch) lasts the sum of its kernels' times (parallelism/compute.h,
// scaled by the GPU's slowdown) plus its tensor-parallel collectives, timed with comm's closed
// form as single events (a TP group sits inside one non-blocking NVSwitch node, so nothing else
// contends with it). Pipeline sends/receives and the data-parallel gradient reduction are flows
// on comm's FlowNetwork, so they contend on NICs and switches with each other; the DP
// reduction runs in buckets (launched as the last micro-batch's backward produces them when
// overlap_dp is set, else after the last backward), serialised on one communicator as NCCL
// does, and couples every replica to the slowest. The gradient-norm reduction that precedes
// Megatron's optimizer acts as a barrier across stages (preceded, with pp > 1, by the tied
// embedding's gradient all-reduce between the first and last stage); then each stage runs its
// optimizer (memory-bound) and, with ZeRO ≥ 1, the all-gather of updated weights.
//
// Representative simulation: replicas whose GPUs are all healthy behave identically, so one
// healthy replica is simulated for all of them, plus every replica holding a slowed GPU, a GPU
// whose own NIC, NVLink or PCIe link is degraded, or a pipeline send whose route crosses a
// degraded link (PXN routes a cross-rail send through another GPU's NIC); all replicas when a
// switch link is degraded. Inside a stage all TP ranks are identical except for their slowdown: the
// stage runs at its slowest TP rank (TP collectives synchronise them every layer). Flows are
// started for TP rank 0; when a node has fewer NICs than GPUs, its bytes are scaled by the TP peers
// sharing the NIC. A degraded NIC, NVLink or PCIe link of another TP rank's GPU is therefore
// applied to the same link of its TP rank 0 (the worst factor wins): that rank's DP ring and
// pipeline sends stand for its peers', and the stage waits for the slowest. TP collectives are
// priced once on the idle topology, so a degraded NVLink slows DP and pipeline traffic through
// it but not the TP all-reduces (a known gap). Data-parallel
// collectives over more than StepConfig::flow_collective_max_nodes nodes run as one closed-form
// event. StepResult::simulation_note says what was simulated.
//
// Accounting: for the reported GPU the breakdown categories add up to the step time exactly:
// compute (kernels, incl. recomputation), exposed TP communication, exposed DP communication
// (gradient reduction not hidden behind backward, the tied-embedding all-reduce, ZeRO
// gathers), PP wait (input in flight on the network, and, with blocking sends, the sender held
// until its send has drained — including waiting for the receiver's task to end), bubble
// (input not yet produced: pipeline fill/drain, and waiting at the gradient-norm barrier for
// other stages), optimizer, other (waiting at the end for slower stages).
//
// Calibration: with StepConfig::calibration set, matrix products take the measured rate where
// the file covers their shape (parallelism/compute.h), and TP collectives (closed form) the
// measured curve where it covers (op, algorithm, TP size, nodes, bytes)
// (comm::EstimateCollectiveCalibrated); pipeline sends and DP/ZeRO/embedding reductions stay
// modelled (as flows that contend on the network, which a one-collective-at-a-time measurement
// does not capture, or in closed form over more than flow_collective_max_nodes nodes).
// StepResult::calibration says what came from the file.
//
// Determinism: no randomness; same config and state → identical result.
#ifndef TRAINSIM_PARALLELISM_STEP_SIMULATION_H_
#define TRAINSIM_PARALLELISM_STEP_SIMULATION_H_

#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "comm/calibration.h"
#include "comm/topology.h"
#include "parallelism/compute.h"
#include "parallelism/layout.h"
#include "parallelism/memory.h"
#include "parallelism/model.h"
#include "sim/status.h"

namespace trainsim::parallelism {

struct StepConfig {
  ModelSpec model;
  ParallelConfig parallel;
  GpuSpec gpu;
  ComputeParams compute;
  MemoryParams memory;
  comm::TopologySpec topology;
  // Simulate a layout that does not fit in memory anyway (result says fits = false and why).
  bool allow_oom = false;
  int report_gpu = 0;  // whose step breakdown to report
  // Measured GEMM rates and collective curves (null = the model only); GEMM rows of
  // `gemm_dtype` (comm::kCalibDtypes: the model's precision) are used.
  std::shared_ptr<const comm::Calibration> calibration;
  std::string gemm_dtype = "bf16";
  // Data-parallel collectives (gradient reduction, ZeRO gathers) whose group spans more than
  // this many nodes are timed as one event by comm's closed form on the network's current link
  // capacities (degraded links count) instead of as flows. Why: a flow expansion over n nodes
  // costs O(n) flows per wave and max-min solves per drain, so one step of a 16,384-GPU job
  // took hours; the closed form agrees with the expansion on an idle network (comm tests, 1%).
  // What is lost: such a collective does not contend with concurrent pipeline sends or with
  // other stages' reductions on shared switch links. 32 nodes keeps every bundled validation
  // run (at most 24 nodes per DP group) on flows; a DP group spans tp·dp/gpus_per_node nodes
  // (2,048 GPUs at TP 8 × PP 8: 32 nodes, flows). At 64 nodes a 16,384-GPU sweep's confirmation
  // of TP 4 × PP 32 × DP 128 took 6 s on flows (tree buckets) and gave a step 0.9% longer than
  // the closed form's, so the line sits at 32.
  // 0 = always closed form; a very large value = always flows.
  int flow_collective_max_nodes = 32;
};

// What a step took from its calibration (all zero/empty without one).
struct CalibrationUse {
  bool used = false;  // a calibration was given
  std::string file;
  std::string gpu;
  bool sample = false;
  // Distinct GEMM shapes of one transformer layer (forward, dgrad, wgrad) and how many the
  // file covers.
  int gemm_shapes = 0;
  int gemm_shapes_calibrated = 0;
  // TP collectives, one entry per distinct (op, ranks, nodes) in first-use order, e.g.
  // "all_gather 8 ranks"; calibrated when every size of it was covered.
  std::vector<std::string> collectives_calibrated;
  std::vector<std::string> collectives_modelled;
};

struct LinkDegradation {
  comm::LinkId link = 0;
  double bandwidth_factor = 1.0;  // 0 = down (flows on it stall)
};

// The state of the cluster the step runs on (the run simulation varies it).
struct ClusterState {
  // (GPU id, factor ≥ 1): that GPU's kernels take `factor` times longer.
  std::vector<std::pair<int, double>> gpu_slowdown;
  std::vector<LinkDegradation> links;
};

struct StepBreakdown {
  double compute_s = 0;
  double exposed_tp_comm_s = 0;
  double exposed_dp_comm_s = 0;
  double pp_wait_s = 0;
  double bubble_s = 0;
  double optimizer_s = 0;
  double other_s = 0;
  double total_s() const {
    return compute_s + exposed_tp_comm_s + exposed_dp_comm_s + pp_wait_s + bubble_s + optimizer_s +
           other_s;
  }
};

// One slice of the Chrome/Perfetto trace.
struct TraceSlice {
  int gpu = 0;
  int track = 0;  // 0 = compute stream, 1 = communication
  std::string name;
  std::string category;
  double start_s = 0;
  double duration_s = 0;
};

struct StepResult {
  double time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;  // hardware FLOPs (incl. recomputation; Narayanan's convention)
  double mfu = 0;             // model FLOPs / (time · GPUs · peak)
  double hfu = 0;             // hardware FLOPs / (time · GPUs · peak)
  double model_flops = 0;     // per iteration, all GPUs
  double hardware_flops = 0;
  MemoryReport memory;
  int report_gpu = 0;
  std::string report_gpu_place;                // Layout::Describe
  StepBreakdown breakdown;                     // of report_gpu
  std::vector<StepBreakdown> stage_breakdown;  // report_gpu's replica, index = pp rank
  int simulated_replicas = 0;
  // Data-parallel collectives timed in closed form (StepConfig::flow_collective_max_nodes) and
  // the most nodes one of them spanned (0 when all ran as flows).
  int closed_form_collectives = 0;
  int closed_form_max_nodes = 0;
  std::string simulation_note;
  uint64_t events = 0;
  uint64_t flows = 0;
  std::vector<TraceSlice> trace;  // when SimulateOptions::record_trace
  CalibrationUse calibration;
};

struct SimulateOptions {
  bool record_trace = false;
};

// Validates the layout against the model and the topology (InvalidArgument, naming the
// values), checks memory (FailedPrecondition with the stage, excess and fixes unless
// allow_oom), then simulates one step.
Result<StepResult> SimulateStep(const StepConfig& config, const ClusterState& state = {},
                                const SimulateOptions& options = {});

// Writes the trace as Chrome trace-event JSON (opens in ui.perfetto.dev): one process per
// simulated GPU (TP rank 0 of each stage of each simulated replica; its TP peers are identical),
// a compute and a communication thread, slices in µs: every task (F/B per micro-batch and
// chunk), idle waits, TP collectives, PP sends, DP reductions, the optimizer, and the first
// micro-batch's kernels layer by layer.
void WriteChromeTrace(const StepResult& result, std::ostream& out);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_STEP_SIMULATION_H_
