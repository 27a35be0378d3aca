// step/step_simulation.h — one training iteration, operation by operation, on the engine.
//
// Every pipeline stage of the simulated data-parallel replicas runs its schedule: tasks last
// their kernels' and TP collectives' time; pipeline sends and the DP gradient reduction are
// flows that contend on the network; then the gradient-norm barrier, the optimizer and the ZeRO
// gathers. Healthy replicas are simulated once for all (step/replica_plan.h). The model and what
// it leaves out: docs/step-simulation.md.
//
// Promises: for the reported GPU the breakdown's categories add up to the step time exactly;
// every user error is a Status naming the value (the layout, a GPU, a link, memory with fixes);
// no randomness, so the same config and state give an identical result.
#ifndef TRAINSIM_STEP_STEP_SIMULATION_H_
#define TRAINSIM_STEP_STEP_SIMULATION_H_

#include <cstdint>
#include <limits>
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
#include "sim/trace_writer.h"
#include "step/host_overhead.h"
#include "step/input_pipeline.h"

namespace trainsim::step {

struct StepConfig {
  parallelism::ModelSpec model;
  parallelism::ParallelConfig parallel;
  parallelism::GpuSpec gpu;
  parallelism::ComputeParams compute;
  parallelism::MemoryParams memory;
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
  // capacities (degraded links count) instead of as flows; such a collective does not contend
  // with concurrent pipeline sends or with other stages' reductions on shared switch links. No
  // line by default (issue 20, session 11): every collective of every stage runs as flows at
  // any scale — with PAT, hierarchical and CollNet legs in flow classes, `run` of TP 8 × PP 8 ×
  // DP 2,048 on 131,072 H100 (tests/hardening/limits/gpus_128k.textproto) takes ~2 s of CPU with
  // every DP collective on flows (bench/README.md). It was 32 nodes, then 128 (session 10). A
  // lower value is for comparisons with the closed form (tests, bench); 0 = always closed form.
  int flow_collective_max_nodes = std::numeric_limits<int>::max();
  // A stage's queued gradient buckets, while nothing else crosses their links, are timed
  // from one bucket's run alone instead of as flows, and continue as flows at the instant other
  // traffic arrives (step/gradient_sync.h, "Trains"): the same step to the nanosecond's rounding
  // of a partly moved bucket. Off only for comparisons (tests, bench).
  bool bucket_trains = true;
  // A CP ring exchange that starts while nothing else crosses its links runs as one event, from
  // its run alone, and continues as flows the instant other traffic arrives (pipeline_traffic.cc,
  // "Folded exchanges"): the same step to the nanosecond's rounding. Off only for comparisons.
  bool fold_exchanges = true;
  // With many micro-batches, simulate shorter steps past the schedule's warm-up (3, 4, 5, ...
  // groups of pp micro-batches) until one's events are the one before's with its last group
  // repeated (or, where groups alternate, the one two groups shorter's with its last two), then
  // extend every part linearly to the step's micro-batches (docs/step-simulation.md, "Many
  // micro-batches"). Where the events never repeat, three short steps that grow alike per group
  // (the step time and every part of every stage, to a millionth) and a step of a quarter of the
  // micro-batches on their line are needed instead. The short steps may cost half the whole
  // step's micro-batches; if they do not repeat or agree within that, the step is simulated
  // whole. Never with the trace, GPipe or a charged data loader (ZeRO-2/3 steps are extended:
  // each backward drains its own reductions). Off only for comparisons.
  bool steady_state_extrapolation = true;
  // The data loader of each node (step/input_pipeline.h; the default never binds) and the
  // host's launch and per-step overheads (step/host_overhead.h).
  InputPipelineSpec input;
  HostOverheadSpec host;
  // NCCL_MIN/MAX_NCHANNELS (NCCL_MIN/MAX_CTAS) as the job sets them: bounds on the CTAs an
  // overlapped collective takes from the compute (step/comm_sm_share.h). 0 = NCCL's default.
  int nccl_min_ctas = 0;
  int nccl_max_ctas = 0;
  // GPU -> host and host -> GPU copy bandwidth, bytes/s: what activation offloading
  // (ParallelConfig::cpu_offload_layers, step/activation_offload.h) offloads and reloads at.
  double host_d2h_Bps = 64e9;
  double host_h2d_Bps = 64e9;
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
  double exposed_cp_comm_s = 0;  // context parallelism's K/V exchange beyond the attention
  double exposed_ep_comm_s = 0;  // expert parallelism's token dispatch/combine all-to-alls
  double exposed_dp_comm_s = 0;
  double pp_wait_s = 0;
  double bubble_s = 0;
  double optimizer_s = 0;
  double other_s = 0;
  // The first stage waiting for the data loader's next micro-batch (step/input_pipeline.h).
  double input_stall_s = 0;
  // The GPU waiting for the host: passes whose kernel launches outlast their kernels, and the
  // per-step framework time (step/host_overhead.h).
  double host_overhead_s = 0;
  // Compute slowed by overlapped communication: the time the compute lost to the SMs that
  // NCCL's kernels (and TE's userbuffers) occupy while they run beside it (step/comm_sm_share.h).
  // compute_s is the compute at the full GPU's rate.
  double compute_slowed_s = 0;
  // The GPU waiting for activation offloading: an offloaded layer's copy to the host not done
  // when Transformer Engine frees its memory, or its copy back not done when its backward
  // starts (step/activation_offload.h).
  double offload_wait_s = 0;
  double total_s() const {
    return compute_s + exposed_tp_comm_s + exposed_cp_comm_s + exposed_ep_comm_s +
           exposed_dp_comm_s + pp_wait_s + bubble_s + optimizer_s + other_s + input_stall_s +
           host_overhead_s + compute_slowed_s + offload_wait_s;
  }
};

// The step trace (SimulateOptions::record_trace; written by WriteChromeTrace, docs/trace.md).
// Times are integer nanoseconds of simulated time, so slices that touch or nest in the engine's
// integer clock touch or nest exactly in the file.
enum TraceTrack : int {
  kTrackCompute = 0,    // tasks, their layers and kernels, idle waits, the optimizer
  kTrackTp = 1,         // tensor-parallel collectives, per layer
  kTrackCp = 2,         // context parallelism's K/V exchange
  kTrackEp = 3,         // expert parallelism's all-to-alls
  kTrackPp = 4,         // pipeline sends and receives
  kTrackDp = 5,         // data-parallel gradient reductions and ZeRO/FSDP gathers
  kTrackEmbedding = 6,  // the tied embedding's all-reduce between the first and last stage
  kTrackCount = 7,
};
const char* TraceTrackName(int track);

struct TraceSlice {
  int gpu = 0;
  int track = kTrackCompute;
  std::string name;
  std::string category;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  sim::TraceArgs args;  // bytes, algorithm, FLOPs, layer, micro-batch, ... as applicable
};

// An arrow from a slice on one track to a slice on another (a pipeline send to its receive):
// indices into StepResult::trace.
struct TraceFlow {
  uint64_t id = 0;
  size_t from_slice = 0, to_slice = 0;
};

// One sample of a counter track: `value` from `at_ns` until the track's next sample.
// gpu >= 0: a per-GPU counter (memory in use); gpu < 0: a network link's (link = -gpu - 1).
struct TraceCounterSample {
  int gpu = 0;
  std::string name;
  int64_t at_ns = 0;
  double value = 0;
};

// What a simulated GPU stands for, to name its tracks.
struct TraceGpu {
  int gpu = 0, replica = 0, stage = 0;
};

struct StepTrace {
  std::vector<TraceGpu> gpus;
  std::vector<TraceFlow> flows;
  std::vector<TraceCounterSample> counters;
  std::vector<std::pair<int, std::string>> link_names;  // (link id, name) of counted links
};

struct StepResult {
  double time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;  // hardware FLOPs (incl. recomputation; Narayanan's convention)
  double mfu = 0;             // model FLOPs / (time · GPUs · peak)
  double hfu = 0;             // hardware FLOPs / (time · GPUs · peak)
  double model_flops = 0;     // per iteration, all GPUs
  double hardware_flops = 0;
  parallelism::MemoryReport memory;
  int report_gpu = 0;
  std::string report_gpu_place;                // Layout::Describe
  StepBreakdown breakdown;                     // of report_gpu
  std::vector<StepBreakdown> stage_breakdown;  // report_gpu's replica, index = pp rank
  int simulated_replicas = 0;
  // Data-parallel collectives timed in closed form (StepConfig::flow_collective_max_nodes; none
  // by default) and the most nodes one of them spanned (0 when all ran as flows).
  int closed_form_collectives = 0;
  int closed_form_max_nodes = 0;
  std::string simulation_note;
  uint64_t events = 0;
  uint64_t flows = 0;
  std::vector<TraceSlice> trace;  // when SimulateOptions::record_trace
  StepTrace trace_extra;          // its tracks, flows and counters
  CalibrationUse calibration;
  // The data loader of the busiest node (all 0 when it never binds): seconds per micro-batch of
  // all the replicas it feeds, micro-batches queued at the step's start, replicas fed.
  double loader_s_per_micro_batch = 0;
  int64_t loader_queued = 0;
  int loader_replicas = 0;
};

struct SimulateOptions {
  bool record_trace = false;
  // Micro-batches whose passes the trace breaks into layers, TP collectives per layer and
  // kernels (the first N; the rest show each pass as one slice with its totals in args).
  // -1 = all. One is the default because the demo has 768 micro-batches of 12 layers on 8
  // stages: every one in detail would be ~10^6 slices, too many for a viewer to open quickly.
  int64_t trace_microbatches = 1;
};

// Validates the layout against the model and the topology (InvalidArgument, naming the
// values), checks memory (FailedPrecondition with the stage, excess and fixes unless
// allow_oom), then simulates one step.
Result<StepResult> SimulateStep(const StepConfig& config, const ClusterState& state = {},
                                const SimulateOptions& options = {});

// Writes the trace as Chrome trace-event JSON (opens in ui.perfetto.dev; layout in
// docs/trace.md): one process per simulated GPU (TP rank 0 of each stage of each simulated
// replica; its TP peers are identical) with a track per role ("stage 3 / tp 0 / compute", tp,
// cp, ep, pp, dp), slices on each track nested or disjoint (a slice that would overlap another
// partially goes to a numbered extra track), args on every slice, flow arrows from each pipeline
// send to its receive, and counter tracks for memory in use and pipeline link utilisation.
void WriteChromeTrace(const StepResult& result, std::ostream& out);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_STEP_SIMULATION_H_
