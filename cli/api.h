// cli/api.h — each command's work and its --json document as library calls, shared by the
// `trainsim` commands (cli/*_command.cc) and the Python module (python/): one code path, so
// `trainsim.run(...)` in Python and `trainsim run --json` print the same document.
//
// Contract: every function takes the scenario as a ScenarioInput (a file, or text in memory such
// as a Python dict dumped to JSON) plus the command's options, checks the options in the order the
// command does, and returns a Status for any bad input (the message the command prints after
// "trainsim: error: "), never exits. The *Document functions return exactly what the command
// prints on stdout with --json (a JSON document and a newline). Same input ⇒ the same document.
// Every option's default is the command's (docs/commands.md gives the reasons).
#ifndef TRAINSIM_CLI_API_H_
#define TRAINSIM_CLI_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "scenarios/scenario.h"
#include "scenarios/session.h"
#include "sim/status.h"
#include "sweep/distributed.h"
#include "sweep/sweep.h"

namespace trainsim::cli {

// A run of more than 32 digits in `message` (a 3,000-digit number the parser echoes) shortened to
// its first 20 and its length, so an error stays one readable line.
std::string ElideLongNumbers(const std::string& message);

namespace api {

// An error's message exactly as the command prints it after "trainsim: error: ".
std::string ErrorMessage(const Status& status);

// The scenario: the file `path` when non-empty, else `text` (text format or JSON) with `name`
// standing in for the path in error messages; `sets` are --set overrides ("parallelism.tp=4").
struct ScenarioInput {
  std::string path;
  std::string text;
  std::string name = "<scenario>";
  std::vector<std::string> sets;
};

// LoadScenario (or ParseScenarioText) + Resolve.
Result<scenarios::ResolvedScenario> Load(const ScenarioInput& input);

// `check --json`.
Result<std::string> CheckDocument(const ScenarioInput& input);

// `run`: the step, then the whole run.
struct RunOptions {
  bool allow_oom = false;
  int gpu = 0;  // whose step breakdown to report
  bool events = false;
  int64_t trials = 0;
  std::optional<uint64_t> seed;
  bool optimize_interval = false;
  std::string calibration;
  bool record_trace = false;       // keep the step's trace events (for --trace)
  int64_t trace_microbatches = 1;  // micro-batches drawn layer by layer (-1 = all)
  bool progress = true;            // a progress bar on a terminal (sim::ProgressBar decides)
  // Threads for the Monte Carlo trials and the interval scan: 0 = all cores
  // (sim::ResolveThreads); the output is byte-identical at any count.
  int threads = 0;
  // Keep the run's event log and phases in the outcome (scenarios::RunRequest::keep_log): on
  // for `events`, a trace or an HTML report; the command turns it off when it shows none.
  bool keep_log = true;
};
struct RunOutcome {
  scenarios::ResolvedScenario resolved;
  scenarios::StepOutcome step;
  scenarios::RunOutcome run;
};
Result<RunOutcome> Run(const ScenarioInput& input, const RunOptions& options);
// The same on a scenario already loaded (the command opens its output files in between).
Result<RunOutcome> Run(scenarios::ResolvedScenario resolved, const RunOptions& options);
// The run simulation's request for `options` (seed, trials, interval scan, progress).
scenarios::RunRequest RunRequestOf(const RunOptions& options);
std::string RunDocument(const RunOutcome& outcome, bool events);

// `whatif`: the scenario with and without the added faults.
struct WhatIfOptions {
  std::vector<std::string> fail;
  std::vector<std::string> slow;
  bool events = false;
  int64_t trial = 0;
  // The distribution of the delta over failure histories [0, trials); -1 = 100 when the
  // stochastic failure model is on (one history is noise: failures shift against checkpoints),
  // else 0 (every history is the same).
  int64_t trials = -1;
  int threads = 0;  // for the trials: 0 = all cores; the output is the same at any count
};
struct WhatIfOutcome {
  scenarios::ResolvedScenario resolved;
  std::vector<run::ScheduledFault> added;
  scenarios::WhatIfOutcome whatif;
  int64_t trials = 0;  // the histories compared (WhatIfOptions::trials resolved)
};
Result<WhatIfOutcome> WhatIf(const ScenarioInput& input, const WhatIfOptions& options);
std::string WhatIfDocument(const WhatIfOutcome& outcome, const WhatIfOptions& options);

// `sweep`: every valid layout, ranked.
struct SweepOptions {
  std::vector<int> gpus;
  std::string objective = "time";
  int top = 10;
  double tokens = 0;
  bool tp_across_nodes = false;
  std::vector<int> micro_batches;
  int64_t trials = 0;
  std::vector<int> cp, ep, etp, zero;
  bool no_uneven = false;
  bool no_overlaps = false;
  bool progress = true;  // a progress bar on a terminal outside CI (sim::ProgressBar decides)
  // GPU types to sweep (catalogue names or aliases; each brings its node type); empty = the
  // scenario's.
  std::vector<std::string> gpu_types;
  // cluster.memory_headroom for this sweep ("" = the scenario's, else 5% of HBM).
  std::string memory_headroom;
  std::string pareto = "time,cost";  // the Pareto front's two objectives
  int threads = 0;                   // per rank, for the confirmations (0 = all cores)
};
struct SweepOutcome {
  scenarios::ResolvedScenario resolved;  // the first GPU type's
  std::vector<sweep::SweepProblem> problems;
  sweep::SweepResult result;
  sweep::SweepOptions options;
  std::string scenario;  // the path (or name) the scenario came from
};
// The options' own checks (objective, top, trials, tokens), before the scenario is read.
Status CheckSweepOptions(const SweepOptions& options);
// The sweep problem and the sweep's options for a loaded scenario (the command opens its CSV
// between this and sweep::RunSweep).
struct SweepPlan {
  std::vector<sweep::SweepProblem> problems;  // one per GPU type
  sweep::SweepOptions options;
};
// The --set overrides that load the scenario for each GPU type of options.gpu_types (one entry,
// `sets` with the headroom, when it is empty): `sets` + cluster.gpu=NAME, cluster.node_type=""
// (the GPU's own node), cluster.memory_headroom.
std::vector<std::vector<std::string>> SweepHardwareSets(const std::vector<std::string>& sets,
                                                        const SweepOptions& options);
// `resolved`: the scenario loaded with each of SweepHardwareSets, in order.
Result<SweepPlan> PlanSweep(const std::vector<scenarios::ResolvedScenario>& resolved,
                            const SweepOptions& options);
// `comm` splits the work across MPI ranks (sweep::MakeCommunicator); every rank gets the outcome,
// only rank 0's result is complete.
Result<SweepOutcome> Sweep(const ScenarioInput& input, const SweepOptions& options,
                           sweep::Communicator* comm);
std::string SweepDocument(const SweepOutcome& outcome);

// `collective`: one collective timed over the scenario's network for a range of sizes.
struct CollectiveOptions {
  std::string op = "all_reduce";
  std::string algo = "auto";
  std::string group;
  std::string sizes = "8B:8GiB";
  int step_factor = 2;
  bool expand = false;
  std::string calibration;
  // Time the bytes nccl-tests moves for each size (scenarios::CollectiveRequest::
  // nccl_tests_counts): what `--format nccl-tests` prints.
  bool nccl_tests_counts = false;
};
struct CollectiveOutcome {
  scenarios::ResolvedScenario resolved;
  comm::Op op{};
  scenarios::CollectiveOutcome outcome;
  scenarios::CollectiveRequest request;  // what was timed (sizes, algorithm, group)
};
Result<CollectiveOutcome> Collective(const ScenarioInput& input, const CollectiveOptions& options);
std::string CollectiveDocument(const CollectiveOutcome& outcome);

}  // namespace api
}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_API_H_
