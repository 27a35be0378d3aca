// sweep/sweep.h — every parallel layout of a model on one or more cluster sizes, ranked by time
// to train or by cost, with failures and checkpoints counted.
//
// Each layout is rejected with its reason or timed by the estimator (sweep/estimator.h) with
// memory, MFU, expected ETTR (Daly) and cost; the best K and the time–cost Pareto front are
// confirmed by the step simulation, and only confirmed rows are ranked and printed. Plain
// structs in and out (no protobuf); docs/sweep.md says what is enumerated and how expected ETTR is
// computed. Promises: results ordered by layout index and ranked with total orders, so the
// output is identical for any number of MPI ranks.
#ifndef TRAINSIM_SWEEP_SWEEP_H_
#define TRAINSIM_SWEEP_SWEEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "parallelism/layout.h"
#include "run/run_simulation.h"
#include "sim/status.h"
#include "step/step_simulation.h"
#include "sweep/distributed.h"
#include "sweep/estimator.h"

namespace trainsim::sweep {

enum class Objective { kTime, kCost, kEnergy };
Result<Objective> ParseObjective(const std::string& name);  // "time", "cost" or "energy"
const char* ObjectiveName(Objective o);
// "time,cost" (the default front), "time,energy", "cost,energy": two different objectives.
Result<std::pair<Objective, Objective>> ParseParetoAxes(const std::string& text);

// Energy of a training run: each GPU draws tdp_watts × (idle_fraction + (1 − idle_fraction) ×
// busy), busy = the share of the step it computes; the facility draws pue × that. The command
// fills it from the catalogue's board power and the scenario's cost block (docs/sweep.md gives
// the sources of the defaults).
struct EnergyModel {
  double tdp_watts = 0;      // board power of one GPU (catalogue tdp_watts)
  double idle_fraction = 0;  // draw while waiting (bubble, exposed communication), × TDP
  double pue = 1;            // facility power / IT power
  double usd_per_kwh = 0;    // electricity price
};

struct SweepProblem {
  // Template: model, GPU, compute and memory parameters, network (nodes is replaced per GPU
  // count), and parallel.global_batch / overlap_dp / dp_bucket_bytes / pp_scatter_gather.
  step::StepConfig base;
  // Failure model, checkpoint policy and hardware, recovery, price, spares (nodes, degrees and
  // total_steps are set per layout).
  run::RunConfig run;
  int64_t parameters = 0;   // for the checkpoint size
  double token_budget = 0;  // tokens to train
  std::vector<int> gpu_counts;
  bool tp_across_nodes = false;
  std::vector<int> micro_batches = {1, 2, 4, 8, 16};
  // The techniques to try (a sweep restricted to what a published run had available, e.g.
  // Megatron-LM 2021: full recompute, no sequence parallelism, no ZeRO).
  std::vector<parallelism::Recompute> recompute_modes = {parallelism::Recompute::kNone,
                                                         parallelism::Recompute::kSelective,
                                                         parallelism::Recompute::kFull};
  std::vector<bool> sequence_parallel = {false, true};  // true applies only with TP > 1
  int max_zero_stage = 3;  // caps zero_stages; ZeRO-3 only without PP (ValidateLayout)
  std::vector<int> zero_stages = {0, 1, 2, 3};  // ZeRO ≥ 1 only with DP × CP > 1
  // ZeRO-2 with PP > 1 reduce-scatters every micro-batch's gradients (DeepSpeed's stage 2, which
  // DeepSpeed's PipelineEngine itself refuses); the stacks that pipeline (Megatron's distributed
  // optimizer, PyTorch's pipelining with FSDP) reduce whole gradients once a step. It is
  // tried only when asked for (--zero lists it): each such layout's step simulation runs
  // micro-batches × buckets reductions, seconds per layout at hundreds of micro-batches.
  bool zero2_with_pp = false;
  bool interleaving = true;
  bool gpipe = true;
  // Context parallelism: the CP degrees to try; empty = every power of two up to max_cp that
  // divides GPUs / TP and splits seq_len into 2·cp equal chunks (Megatron-Core's causal load
  // balancing). cp_comm comes from the base (P2P ring by default).
  std::vector<int> cp_degrees;
  // Meta's largest published CP degree (Llama 3 405B, 128k context, Dubey et al. 2024 §3.3.2).
  int max_cp = 16;
  // MoE models only: EP degrees (empty = every divisor of the expert count) and ETP degrees
  // (empty = {1, tp}: Megatron-Core runs experts either untensored or on the dense TP group).
  std::vector<int> ep_degrees;
  std::vector<int> etp_degrees;
  // Layers that do not divide pp·v: try the first/last stage splits that make the middle stages
  // even (Megatron's --decoder-first/last-pipeline-num-layers); see StageSplits.
  bool uneven_pipelines = true;
  // ZeRO-3 with pp 1: also hybrid sharding over one node's DP ranks (shard_group).
  bool hybrid_sharding = true;
  // The overlaps 2025 Megatron-Core/NeMo recipes turn on: tp_comm_overlap with sequence
  // parallelism, overlap_param_gather with the distributed optimizer (ZeRO ≥ 1), overlap_p2p
  // under interleaving. false: the base's flags, as a scenario sets them.
  bool modern_overlaps = true;
  // Layouts to confirm with the step simulation beyond the top K: the Pareto front too.
  bool confirm_pareto = true;
  // Step time per cluster state for the Monte Carlo run simulation of the top layouts
  // (SweepOptions::trials); the command passes scenarios::MakeStepTimeFn. Needed only then.
  std::function<run::StepTimeFn(const step::StepConfig&)> step_time_fn;
  EnergyModel energy;
  // Which hardware this problem is (RunSweeps over several GPU types): stamped on every
  // Candidate, and named in the output.
  int hardware = 0;
  std::string hardware_name;  // the GPU's catalogue name ("H100-SXM-80GB")
  std::string node_name;      // its node type ("DGX-H100")
};

// One layout: the GPU count and the parallel configuration (global batch from the problem).
struct Candidate {
  int gpus = 0;
  int hardware = 0;  // SweepProblem::hardware
  parallelism::ParallelConfig parallel;
};

// The layout tuple every ordering falls back on: (gpus, hardware, tp, cp, ep, etp, pp, dp,
// first/last stage layers, micro_batch, schedule, virtual_stages, recompute, sequence_parallel,
// zero_stage, shard_group).
bool LayoutLess(const Candidate& a, const Candidate& b);
// "tp 8 pp 8 dp 2 mb 1 1f1b recompute selective sp zero 1"; cp, ep, etp, first/last stage
// layers and shard_group appear when they differ from the default.
std::string DescribeLayout(const Candidate& c);

struct Evaluation {
  int64_t index = 0;  // position in EnumerateLayouts
  Candidate layout;
  bool rejected = false;
  std::string reason;                 // why rejected (empty otherwise)
  bool fits = false;                  // false for an invalid layout or one over memory
  double memory_bytes_per_gpu = 0;    // peak over stages (0 when invalid)
  double memory_shortfall_bytes = 0;  // peak − capacity when it does not fit
  double step_time_s = 0;
  double estimated_step_time_s = 0;  // the analytic estimate (= step_time_s unless confirmed)
  double mfu = 0;
  double expected_ettr = 0;          // Daly's expected ETTR at the optimal interval
  double checkpoint_interval_s = 0;  // Daly's optimum (0 = never: no failures)
  double time_to_train_s = 0;
  double gpu_hours = 0;
  double cost_usd = 0;
  bool confirmed = false;  // step_time_s comes from the step simulation
  // Monte Carlo over failure histories (top layouts, SweepOptions::trials > 0): the run
  // simulation with Daly's interval (`auto`), means over the trials.
  int64_t trials = 0;
  double mc_ettr = 0;  // simulated ETTR, mean over the trials
  double mc_time_to_train_s = 0;
  double mc_cost_usd = 0;
  double mc_time_p10_s = 0, mc_time_p90_s = 0;  // spread of the wall time over the trials
  double mc_cost_p10_usd = 0, mc_cost_p90_usd = 0;
  // Energy (SweepProblem::energy): the share of the step the GPU computes, its mean board
  // draw, and the facility's energy and its price over time_to_train_s.
  double busy_fraction = 0;
  double gpu_watts = 0;
  double energy_kwh = 0;
  double energy_cost_usd = 0;
  // Confirmed rows: where the step's time goes on GPU 0 (the step simulation's breakdown).
  step::StepBreakdown breakdown;
  // Printed rows only: the indices of the layouts that are the same in effect (SameInEffect),
  // which this row stands for.
  std::vector<int64_t> equivalents;
};

// The expected-ETTR model (Daly) of one job size (see the header comment).
struct GoodputEstimate {
  double expected_ettr = 1;
  double interval_s = 0;  // 0 when failures are off
  double mtbf_s = 0;      // +inf when failures are off
  double checkpoint_cost_s = 0;
  double restart_s = 0;
};
Result<GoodputEstimate> ExpectedGoodput(const run::RunConfig& run, int64_t parameters, int gpus,
                                        int gpus_per_node);

// Checks the problem: GPU counts positive, whole nodes, a network that can be built; a token
// budget > 0. Messages name the value and what would be valid.
Status ValidateProblem(const SweepProblem& problem);

// Every layout ValidateLayout accepts, in a deterministic order (GPU count, then the nested
// loops of sweep/enumerate.cc). Layouts it would reject (batch not divisible into micro-batches
// × DP, interleaving with m not a multiple of pp, …) are not listed.
std::vector<Candidate> EnumerateLayouts(const SweepProblem& problem);

// (first_stage_layers, last_stage_layers) to try for `layers` on pp stages × v chunks:
// {(-1, -1)} when they split evenly; else, with `uneven`, the splits that give the pp − 2
// middle stages L layers each (L a multiple of v, the two smallest such L that leave the first
// and last stages between 0 and L layers), the first and last sharing the rest as evenly as
// multiples of v allow (126 layers on pp 16: (7, 7) and (0, 0)); else none.
std::vector<std::pair<int, int>> StageSplits(int layers, int pp, int v, bool uneven);

// Rejects or evaluates one layout with the estimator (no step simulation).
Evaluation EvaluateLayout(const SweepProblem& problem, const Candidate& candidate,
                          EstimatorCache* cache);

// The step configuration of one layout (the problem's template with the layout and GPU count).
step::StepConfig StepConfigFor(const SweepProblem& problem, const Candidate& candidate);

// Objective value (time to train, cost, or energy) and total order on it: the objective, then
// the other of time and cost (time for energy), then — the tie rule — less memory per GPU, then
// fewer GPUs, then the layout tuple.
double ObjectiveValue(const Evaluation& e, Objective o);
bool BetterThan(const Evaluation& a, const Evaluation& b, Objective o);
// Indices (into `evals`) of the fitting layouts, best first.
std::vector<size_t> Rank(const std::vector<Evaluation>& evals, Objective o);
// Two layouts are one in effect when they are on the same hardware and GPU count with the same
// degrees, stage split, micro-batch and schedule, and have the same step time bit for bit: what
// they differ in (recompute none vs selective under flash attention, whose kernel keeps no scores
// to recompute) changes nothing the model times. Both must fit.
bool SameInEffect(const Evaluation& a, const Evaluation& b);
// The fitting layouts best first with each group of SameInEffect layouts as one (its best by
// BetterThan, which keeps less memory), optionally among confirmed layouts only.
std::vector<size_t> RankDistinct(const std::vector<Evaluation>& evals, Objective o,
                                 bool confirmed_only);
// What `other` sets differently from `rep`: "recompute none", "zero 2", ...
std::string DescribeDifference(const Candidate& rep, const Candidate& other);
// Indices of the Pareto front over two objectives among fitting layouts (no other is at least
// as good on both and better on one), ordered by the first then BetterThan; with
// `confirmed_only`, among the layouts the step simulation confirmed.
std::vector<size_t> ParetoFront(const std::vector<Evaluation>& evals, bool confirmed_only = false,
                                Objective a = Objective::kTime, Objective b = Objective::kCost);

struct SweepOptions {
  Objective objective = Objective::kTime;
  int top_k = 10;
  bool progress = false;  // progress bar on stderr (rank 0 only, and only on a terminal)
  // Monte Carlo trials of the run simulation for each of the top layouts (0 = none). Trials
  // [0, N) are split into contiguous ranges over the ranks (run::RunTrials: trial k
  // depends only on the config and k) and gathered, so the means do not depend on the ranks.
  int64_t trials = 0;
  // Axes of the Pareto front.
  std::pair<Objective, Objective> pareto = {Objective::kTime, Objective::kCost};
  // Threads per rank for the ranking's estimates and the step-simulation confirmations
  // (sim::ParallelFor; results by index, the estimates sharing one thread-safe EstimatorCache
  // whose values are pure functions of their keys, so the output does not depend on it).
  // 1 = the calling thread only.
  int threads = 1;
};

struct SweepResult {
  std::vector<Evaluation> evaluations;  // every layout, in enumeration order
  std::vector<size_t> top;              // best first, at most top_k
  std::vector<size_t> pareto;
  int64_t evaluated = 0;  // layouts that fit and were timed
  int64_t rejected = 0;
  int64_t confirmed = 0;   // step simulations run
  int confirm_rounds = 0;  // rounds until the top K and the front held confirmed layouts only
  // Hardware that had no fitting layout (RunSweeps over several GPU types): the reason per name.
  std::vector<std::pair<std::string, std::string>> skipped_hardware;
  // The same-in-effect rows folded into the printed ones (SameInEffect).
  int64_t collapsed = 0;
};

// Runs the sweep over `comm`'s ranks (every rank returns the same result). Errors:
// InvalidArgument for a bad problem; FailedPrecondition when no layout fits, naming the
// smallest shortfall, the layout it belongs to and what would fix it.
Result<SweepResult> RunSweep(const SweepProblem& problem, const SweepOptions& options,
                             Communicator* comm);
// The same over several problems (one per GPU type, SweepProblem::hardware = its index): one
// ranking over all of them. A GPU type on which nothing fits is listed in skipped_hardware; the
// error is returned only when nothing fits on any.
Result<SweepResult> RunSweeps(const std::vector<SweepProblem>& problems,
                              const SweepOptions& options, Communicator* comm);

}  // namespace trainsim::sweep

#endif  // TRAINSIM_SWEEP_SWEEP_H_
