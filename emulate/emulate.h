// emulate/emulate.h — `trainsim emulate`: a scenario's training loop run by real worker
// processes on loopback or a LAN (Boost.Asio TCP, used only inside emulate/*.cc), with real
// checkpoints, faults injected by real signals, and the run simulation's prediction of the same
// scaled run next to the measurement. docs/emulate.md describes the system.
//
// Promises: every process the coordinator starts is reaped before RunEmulation returns (its
// process group is killed on every exit path, including errors and SIGINT/SIGTERM); the final
// state is compared bit for bit with ReferenceState; bad input (a port in use, an unreachable
// coordinator, a worker of another scenario or protocol version) is an InvalidArgument status
// naming what is wrong.
#ifndef TRAINSIM_EMULATE_EMULATE_H_
#define TRAINSIM_EMULATE_EMULATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/policy.h"
#include "emulate/protocol.h"
#include "run/run_config.h"
#include "run/run_report.h"
#include "scenarios/scenario.h"
#include "sim/status.h"

namespace trainsim::emulate {

struct EmulateOptions {
  int workers = 0;          // 0: min(8, the scenario's nodes)
  int64_t steps = 0;        // 0: from --duration, else min(the scenario's steps, kDefaultSteps)
  double duration_s = 0;    // wall seconds of the fault-free run (sets steps)
  double time_scale = 0;    // scenario seconds per wall second; 0: a step of kDefaultStepWallS
  int64_t state_bytes = 0;  // 0: kDefaultStateBytes
  std::string dir;          // checkpoints; required
  std::string listen = "127.0.0.1:0";
  bool spawn = true;    // start the workers here (false: wait for `trainsim worker`s)
  bool resume = false;  // continue from DIR's newest complete manifest
  // Test hook: the rank that is SIGKILLed half way through writing its shard of checkpoint
  // number `kill_during_checkpoint` (1-based; 0 = none).
  int kill_during_checkpoint = 0;
  int kill_during_checkpoint_rank = 0;
  double timeout_s = 300;                  // the whole emulation's wall-time limit
  Algorithm algorithm = Algorithm::kRing;  // --algorithm ring|tree
  std::string self_exe = "/proc/self/exe";
  std::vector<std::string> worker_args;  // appended to `worker --coordinator H:P` (scenario)
};

// Defaults (first principles, not measurements): a fault-free run of 20-60 s wall time
// (the brief) is ~1000 steps of ~25 ms; 1 MiB of state keeps the ring all-reduce of 8
// workers at a few ms on loopback, so a step is mostly the scaled compute.
inline constexpr int64_t kDefaultSteps = 1000;
inline constexpr double kDefaultStepWallS = 0.025;
inline constexpr int64_t kDefaultStateBytes = int64_t{1} << 20;

struct PlannedFault {
  run::ScheduledFault fault;  // as the scenario says (scenario time)
  int rank = 0;               // the worker it hits
  double at_s = 0;            // wall seconds from the start (fault.at / time scale)
  bool drawn = false;         // drawn from the scenario's failure model (failures {}), not listed
  double duration_s = 0;      // STRAGGLER/LINK: 0 = to the end
  checkpoint::DetectionMechanism mechanism = checkpoint::DetectionMechanism::kProcessExit;
  double bound_s = 0;  // the mechanism's delay scaled: detection must come within it
};

struct EmulationPlan {
  int workers = 0;
  int64_t steps = 0;
  double time_scale = 1;
  double compute_s = 0;  // one step's compute, wall seconds (the step simulation's / scale)
  double scenario_step_s = 0;
  int64_t elements = 0;          // doubles of state
  int64_t checkpoint_every = 0;  // steps; 0 = none
  checkpoint::CheckpointPolicy policy = checkpoint::CheckpointPolicy::kSync;
  int persistent_every = 1;  // IN_MEMORY: every k-th checkpoint is also written to DIR
  int keep_last = 0;         // committed manifests kept in DIR (0 = all)
  checkpoint::RecoveryPolicy recovery = checkpoint::RecoveryPolicy::kRestartOnSpare;
  int min_dp = 1;  // ELASTIC: the fewest workers the job continues with
  double process_exit_s = 0, heartbeat_s = 0, collective_timeout_s = 0, requeue_s = 0;
  double repair_s = 0;      // recovery.repair_time, scaled (WAIT_FOR_REPAIR)
  double loss_check_s = 0;  // recovery.detect.loss_check, scaled
  int64_t check_every = 0;  // steps between cross-replica state checks (0: no SDC to find)
  Algorithm algorithm = Algorithm::kRing;
  std::vector<PlannedFault> faults;
  std::vector<std::string> notes;  // what the emulation does differently from the scenario
  uint64_t scenario_hash = 0;
  uint64_t seed = 1;
  run::RunConfig run;  // the scenario's run config, unscaled (MakeRunConfig)
};

// The scaled plan of a resolved scenario: the listed faults, and with failures {} enabled the
// failure model's arrivals (checkpoint::FailureProcess on the run simulation's stream
// "trial/0/failures" of the scenario seed) within the scaled run. InvalidArgument for options or
// faults the emulation cannot run (NIC and a LINK that is down are refused by name).
Result<EmulationPlan> MakePlan(const scenarios::ResolvedScenario& resolved,
                               const EmulateOptions& options);
// The hash a worker must present: FNV-1a of the resolved scenario's serialised proto.
uint64_t ScenarioHash(const scenarios::ResolvedScenario& resolved);

struct MeasuredFault {
  PlannedFault planned;
  bool unplanned = false;  // a detection with nothing injected: a false alarm of a mechanism
  double injected_at_s = 0;
  std::string detected_by;       // the mechanism that fired first (DetectionMechanismName)
  double detected_after_s = -1;  // -1: not detected (a slowdown is not a failure)
  int64_t lost_steps = 0;
  double restart_s = 0;       // detection to the first step after
  std::string restored_from;  // "memory" (peer copies), "storage" (a manifest) or "start"
  int world_after = 0;        // workers of the generation that resumed
  double waited_s = 0;        // of restart_s, the wait for a repair (WAIT_FOR_REPAIR)
  double restore_s = 0;       // the slowest rank's load of the restored checkpoint
};

struct EmulationResult {
  EmulationPlan plan;
  double wall_s = 0;
  int64_t steps = 0, steps_executed = 0, start_step = 0;
  int generations = 0;
  int processes_started = 0;
  int checkpoints = 0;
  double step_s = 0, compute_s = 0, comm_s = 0;                          // healthy means
  double checkpoint_write_s = 0, checkpoint_stall_s = 0, restore_s = 0;  // means
  double restart_s = 0;        // mean, detection to resume
  double bytes_moved = 0;      // all-reduce traffic, all workers
  int memory_checkpoints = 0;  // IN_MEMORY: complete sets of peer copies
  double peer_copy_s = 0;      // mean time of one shard's copy to its peer
  int memory_restores = 0;     // restarts that loaded the peers' in-memory copies
  std::string schedule;        // the world sizes the final state went through (FormatSchedule)
  std::vector<MeasuredFault> faults;
  std::vector<std::string> skipped_manifests;
  bool state_identical = false;
  std::string state_hash, reference_hash;
  // The measured run as the run simulation reports one (phases training/detection/restart,
  // failure, detection, resume and checkpoint events), for `--trace` in `run --trace`'s format.
  run::RunReport measured_timeline;
  // The run simulation of the same scaled scenario, fed the measured costs.
  run::RunReport predicted;
  bool predicted_ok = false;
  std::string prediction_error;
};

// Runs the coordinator: listens, spawns (or waits for) the workers, injects the plan's faults,
// recovers, and returns the measurement with the prediction filled in. A SIGINT or SIGTERM
// stops it (every worker reaped, an error returned); `interrupted_by`, when given, is set to
// that signal (0 otherwise), so that a command can die of it as a shell expects.
Result<EmulationResult> RunEmulation(const EmulationPlan& plan, const EmulateOptions& options,
                                     int* interrupted_by = nullptr);

// The run simulation's prediction for the measured emulation (fills predicted*).
void Predict(EmulationResult* result);

// `trainsim worker`: connects to HOST:PORT, presents `scenario_hash`, trains until told to stop.
// Returns the process exit code (0 done, 1 an I/O failure or the coordinator vanished, 2 bad
// input: unreachable coordinator, refused).
int RunWorker(const std::string& coordinator, uint64_t scenario_hash, double connect_timeout_s);

}  // namespace trainsim::emulate

#endif  // TRAINSIM_EMULATE_EMULATE_H_
