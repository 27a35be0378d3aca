// Loading, overriding, defaulting, validating and resolving trainsim scenarios.
//
// A scenario (scenarios/scenario.proto) is read from protobuf text format or JSON; then
// `--set path=value` overrides are applied (any scalar field by dotted path, enums by name,
// repeated entries by index: `faults.0.at=20h`), every unset field with a documented default is
// filled in (FillDefaults) and the result is validated (ValidateScenario). Resolve() joins it
// with the hardware catalogue and computes derived values.
//
// Promises: no function here crashes or calls exit() on any input; every user error is a
// non-OK Status whose message says where (file:line:column, or the field path) and what would
// be valid. Unknown fields are rejected, naming the closest valid field. Loading is
// deterministic: the same text and overrides give the same Scenario.
// Invariants of a Scenario returned by LoadScenario / ParseScenarioText: every defaulted field
// is set, tp * pp * dp == nodes * gpus_per_node, the catalogue names resolve, and every
// duration string parses.
#ifndef TRAINSIM_SCENARIOS_SCENARIO_H_
#define TRAINSIM_SCENARIOS_SCENARIO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/policy.h"
#include "scenarios/catalogue.h"
#include "scenarios/scenario.pb.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::scenarios {

// Reads, overrides, defaults and validates the scenario at `path`. The format is JSON when the
// path ends in ".json" or the text starts with '{' (after whitespace), else text format.
// Errors: "PATH:LINE:COLUMN: message" for syntax and unknown fields; "PATH: field: message" for
// semantic errors; "--set ASSIGNMENT: message" for overrides. A relative cluster.calibration is
// rewritten relative to the scenario file's directory, and the file must exist.
Result<pb::Scenario> LoadScenario(const std::string& path,
                                  const std::vector<std::string>& set_overrides = {});

// The same from text in memory; `name_for_errors` stands in for the path in messages. Touches
// no files: cluster.calibration is neither rewritten nor checked.
Result<pb::Scenario> ParseScenarioText(std::string_view text, const std::string& name_for_errors,
                                       const std::vector<std::string>& set_overrides = {});

// The individual stages, for callers that build scenarios in code (e.g. sweep).
// Parses only (no overrides, defaults or validation).
Result<pb::Scenario> ParseScenarioSyntax(std::string_view text, const std::string& name_for_errors);
// Applies one "dotted.path=value" assignment.
Status ApplyOverride(pb::Scenario* scenario, std::string_view assignment);
// Fills every unset defaulted field (see scenario.proto). Needs the catalogue names to resolve.
Status FillDefaults(pb::Scenario* scenario);
// Checks a defaulted scenario. Messages name the field and what would be valid.
Status ValidateScenario(const pb::Scenario& scenario);

// Parses a command-line fault: KIND:ID@AT, optionally xSLOWDOWN (straggler) and +DURATION:
//   "gpu:37@16h", "node:3@2d", "nic:12@1h", "link:5@2h", "link:5x0.5@2h+30m" (degraded),
//   "gpu:5x1.3@1h+4h" (straggler), "hang:9@3h", "straggler:5x1.3@1h+4h". Not range-checked: see
//   ValidateFault. A syntax error's message ends with `expected` (by default every form).
Result<pb::Fault> ParseFaultSpec(std::string_view spec);
Result<pb::Fault> ParseFaultSpec(std::string_view spec, const std::string& expected);

// A scheduled fault with its times parsed.
struct ResolvedFault {
  pb::Fault fault;
  sim::Time at;
  std::optional<sim::Time> duration;  // nullopt: until the end of the run (or not applicable)
};

// A validated scenario joined with the catalogue, with the values every consumer derives.
struct ResolvedScenario {
  pb::Scenario scenario;  // defaults filled
  pb::GpuSpec gpu;
  pb::NicSpec nic;
  pb::NodeSpec node;

  int nodes = 0;  // nodes training (spares excluded)
  int gpus_per_node = 0;
  int num_gpus = 0;  // nodes * gpus_per_node == tp * cp * pp * dp
  int spare_nodes = 0;
  int nics_per_node = 0;
  int topology_levels = 0;  // 2 or 3
  int tp = 1, cp = 1, pp = 1, dp = 1, virtual_stages = 1;
  double peak_tflops = 0;  // dense peak per GPU at the model's precision

  int64_t params = 0;  // total parameters (see ParameterCount)
  // Parameters one token passes through: MoE layers count top_k routed experts, not all
  // (parallelism::ActiveParameterCount); equals params for a dense model.
  int64_t active_params = 0;
  int64_t tokens_per_step = 0;         // global_batch * seq_len
  int64_t micro_batches_per_step = 0;  // per pipeline: global_batch / (micro_batch * dp)
  std::optional<int64_t> total_steps;  // from training.tokens or .steps; nullopt for duration
  std::optional<int64_t> total_tokens;
  std::optional<sim::Time> training_duration;  // training.duration, if that is the goal

  checkpoint::CheckpointInterval checkpoint_interval;  // checkpoint.interval, parsed
  double checkpoint_bytes = 0;                         // params * checkpoint.bytes_per_param

  sim::Time detection_delay;
  sim::Time requeue;
  sim::Time process_start;
  sim::Time comm_init;  // comm_init_base + comm_init_per_1k_gpus * num_gpus / 1000
  sim::Time repair_time;

  std::vector<ResolvedFault> faults;  // sorted by (at, kind, id), stable
};

// Joins a scenario with the catalogue. Runs FillDefaults and ValidateScenario first (both are
// idempotent), so any Scenario may be passed.
Result<ResolvedScenario> Resolve(const pb::Scenario& scenario);

// Checks a fault against a resolved scenario (ids in range, times finite, kind-specific fields).
// `where` prefixes messages (e.g. "faults[2]" or "--fail gpu:200@1h").
Status ValidateFault(const pb::Fault& fault, const ResolvedScenario& resolved,
                     const std::string& where);

// The byte offset of the first byte of `text` that is not well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or nullopt when all of it is.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// Total parameters: parallelism::ParameterCount of the model (one count for the whole program).
int64_t ParameterCount(const pb::Model& model);

// "174.6 B", "1.7 B", "350.0 M", "12.3 T": three significant digits or one decimal.
std::string FormatCount(double count);

}  // namespace trainsim::scenarios

#endif  // TRAINSIM_SCENARIOS_SCENARIO_H_
