// scenarios/session.h — what a command asks of a loaded scenario: its calibration, its step
// (healthy and with the scenario's slowdowns), its run with Monte Carlo and the interval scan,
// a what-if comparison with added faults, a collective timed on its network, its sweep problem.
// The commands in cli/ and the tests call these.
//
// Promises: errors are Status (the user's input or the step simulation's), never an exit; the
// same scenario and request give identical outcomes.
#ifndef TRAINSIM_SCENARIOS_SESSION_H_
#define TRAINSIM_SCENARIOS_SESSION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/calibration.h"
#include "comm/collective.h"
#include "run/monte_carlo.h"
#include "run/run_simulation.h"
#include "run/whatif.h"
#include "scenarios/scenario.h"
#include "sim/status.h"
#include "step/step_simulation.h"
#include "sweep/sweep.h"

namespace trainsim::scenarios {

// The calibration for a scenario: `flag_path` when non-empty, else cluster.calibration, else
// none. Loaded and checked against the scenario's GPU; errors name the file.
Result<std::optional<comm::Calibration>> LoadScenarioCalibration(const ResolvedScenario& resolved,
                                                                 const std::string& flag_path);

struct StepRequest {
  bool allow_oom = false;
  int report_gpu = 0;
  std::string calibration_path;  // --calibration; empty = the scenario's
  bool record_trace = false;
  int64_t trace_microbatches = 1;  // step::SimulateOptions::trace_microbatches
};

struct StepOutcome {
  step::StepConfig config;  // the healthy step's config (calibration attached)
  step::StepResult result;
  std::optional<step::StepResult> faulted;  // with the scenario's slowdowns, if any
};

Result<StepOutcome> SimulateScenarioStep(const ResolvedScenario& resolved,
                                         const StepRequest& request);

struct RunRequest {
  std::optional<uint64_t> seed;  // replaces the scenario's seed
  int64_t trials = 0;            // > 0: Monte Carlo over trials [0, trials)
  bool optimize_interval = false;
  int64_t default_scan_trials = 100;  // trials per scanned interval when `trials` is 0
  bool progress = true;               // a progress bar on a terminal (sim::ProgressBar decides)
  int threads = 1;  // ≥ 1: trials run side by side (run::RunTrials; same results as 1)
  // The breakdown of step::SimulateStep(step) on the healthy cluster when the caller has it
  // already (SimulateScenarioStep's result): the run then does not simulate that step again.
  std::optional<step::StepBreakdown> healthy_step;
  // Keep trial 0's event log and phases (RunOutcome::run.events, .phases). A caller that shows
  // neither turns this off: a run with a checkpoint after nearly every step logs one event per
  // checkpoint, about half the run simulation's time at 16,384 GPUs. No number changes.
  bool keep_log = true;
};

struct RunOutcome {
  run::RunConfig config;  // as simulated (seed applied)
  run::RunReport run;     // trial 0, with its event log and phases (RunRequest::keep_log)
  std::optional<run::MonteCarloSummary> stats;
  std::optional<run::IntervalOptimum> optimum;
  int64_t scan_trials = 0;
};

// The run of `resolved` with step times from `step` (the healthy step's config).
Result<RunOutcome> SimulateScenarioRun(const ResolvedScenario& resolved,
                                       const step::StepConfig& step, const RunRequest& request);

// Command-line faults ("gpu:37@16h" for --fail, "gpu:5x1.3@1h+4h" for --slow), validated
// against the scenario. InvalidArgument when none is given.
Result<std::vector<run::ScheduledFault>> ParseAddedFaults(const ResolvedScenario& resolved,
                                                          const std::vector<std::string>& fail,
                                                          const std::vector<std::string>& slow);

struct WhatIfOutcome {
  run::WhatIfReport report;  // on failure history `trial`
  // trials > 0: the deltas over failure histories [0, trials).
  run::Stat delta_wall_time_s, delta_cost_usd, delta_lost_work_s, delta_downtime_s;
  // The per-trial deltas the stats summarise, in trial order (the --html report's CDF).
  std::vector<double> delta_wall_time_samples_s, delta_cost_samples_usd;
};

Result<WhatIfOutcome> SimulateScenarioWhatIf(const ResolvedScenario& resolved,
                                             const std::vector<run::ScheduledFault>& added,
                                             int64_t trial, int64_t trials, int threads = 1);

struct CollectiveRequest {
  comm::Op op = comm::Op::kAllReduce;
  comm::Algo algo = comm::Algo::kAuto;
  std::vector<uint64_t> sizes;   // one row each
  std::string group;             // ParseGpuGroup's forms; empty = every GPU (send_recv: 2)
  bool expand = false;           // the flow-level expansion instead of the closed form
  std::string calibration_path;  // --calibration; empty = the scenario's
  // Time what nccl-tests moves for each size (src/common.cu, setupArgs, and each test's
  // GetCollByteCount): whole 4-byte floats, and for all-gather, reduce-scatter and all-to-all
  // whole 16-byte vectors per rank, so a size is rounded down to a multiple of 4 (16 x the
  // group size); sizes that round to nothing are left out (counted in
  // CollectiveOutcome::sizes_left_out).
  bool nccl_tests_counts = false;
};

struct CollectiveRow {
  uint64_t bytes = 0;
  comm::CollectiveTiming estimate;
  double time_s = 0, algbw_GBps = 0, busbw_GBps = 0;
};

struct CollectiveOutcome {
  std::optional<comm::Calibration> calibration;
  int group_size = 0;
  int num_gpus = 0, num_nodes = 0, gpus_per_node = 0;  // the scenario's cluster
  std::vector<CollectiveRow> rows;
  int sizes_left_out = 0;  // CollectiveRequest::nccl_tests_counts
};

// nccl-tests' bytes for a requested size (CollectiveRequest::nccl_tests_counts): `bytes`
// rounded down to whole 4-byte floats, or to whole 16-byte vectors per rank for the collectives
// that split their buffer over the `ranks` (all-gather, reduce-scatter, all-to-all).
uint64_t NcclTestsBytes(comm::Op op, uint64_t bytes, int ranks);

// Times one collective over a group of the scenario's GPUs for each size.
Result<CollectiveOutcome> TimeScenarioCollective(const ResolvedScenario& resolved,
                                                 const CollectiveRequest& request);

// "N" (the first N GPUs), "N/STRIDE" (N GPUs STRIDE apart) or a list "0,8,16", checked against
// the cluster's `num_gpus`.
Result<std::vector<int>> ParseGpuGroup(std::string_view text, int num_gpus);

// The sweep problem of a resolved scenario: its model, GPU, network, global batch, failure
// model, checkpoint and recovery policies and price. `gpus` empty = the scenario's own GPU
// count; `tokens` <= 0 = the scenario's budget (training.tokens, or steps × tokens per step).
Result<sweep::SweepProblem> MakeSweepProblem(const ResolvedScenario& resolved,
                                             const std::vector<int>& gpus, double tokens);

// `trainsim calibrate`: the arguments (argv[1..]) of the runner trainsim-nccl-calibrate for a
// scenario. --gemm lists the matrix products one GPU runs in each kind of layer the model has
// (a MoE layer's expert GEMMs included), the embedding and the head, under the scenario's whole
// layout (TP, CP, EP, ETP): exactly the shapes the step simulation looks a calibration up with
// (step::PricedGemmOps, parallelism::GemmShapesOf: none for fused flash attention); --dtypes
// follows the precision (BF16 → bf16; FP16 → fp16; FP8 → fp8 and bf16, since FP8 recipes keep
// attention and some layers in BF16; TF32 is an error);
// --expect-gpu the scenario's GPU; -o `output`.
struct CalibrateRequest {
  std::string nranks;  // the runner's --nranks (group sizes); empty = all visible GPUs
  bool quick = false;  // 8 B .. 1 GiB by 8×, 3 repeats: the short run of scripts/gpu-check.sh
};
Result<std::vector<std::string>> CalibrateRunnerArgs(const ResolvedScenario& resolved,
                                                     const CalibrateRequest& request,
                                                     const std::string& output);
// The default calibration file for a scenario path: "dir/gpt.textproto" → "gpt.calibration.json".
std::string DefaultCalibrationPath(const std::string& scenario_path);

}  // namespace trainsim::scenarios

#endif  // TRAINSIM_SCENARIOS_SESSION_H_
