#include "cli/commands.h"

#include <iostream>
#include <string>

namespace trainsim::cli {

void AddScenarioOptions(CLI::App* command, ScenarioOptions* options) {
  command->add_option("SCENARIO", options->path, "Scenario file (.textproto or .json)")->required();
  command
      ->add_option("--set", options->sets,
                   "Override a scalar field by dotted path before validation, e.g. "
                   "--set parallelism.tp=4 --set parallelism.recompute=FULL (repeatable)")
      ->take_all()
      ->allow_extra_args(false)
      ->type_name("PATH=VALUE");
  command->add_flag("--json", options->json, "Print JSON instead of a table");
}

api::ScenarioInput ScenarioInputOf(const ScenarioOptions& options) {
  api::ScenarioInput input;
  input.path = options.path;
  input.sets = options.sets;
  return input;
}

Result<scenarios::ResolvedScenario> LoadResolvedScenario(const ScenarioOptions& options) {
  return api::Load(ScenarioInputOf(options));
}

int ReportError(const Status& status) {
  std::cerr << "trainsim: error: " << ElideLongNumbers(status.message()) << "\n";
  switch (status.code()) {
    case Status::Code::kOk:
      return kExitOk;
    case Status::Code::kUnavailable:
      return kExitUnavailable;
    case Status::Code::kInternal:
      return kExitFailure;
    default:
      return kExitBadInput;
  }
}

}  // namespace trainsim::cli
