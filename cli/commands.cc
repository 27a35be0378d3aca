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

Result<scenarios::ResolvedScenario> LoadResolvedScenario(const ScenarioOptions& options) {
  auto scenario = scenarios::LoadScenario(options.path, options.sets);
  if (!scenario.ok()) return scenario.status();
  return scenarios::Resolve(*scenario);
}

std::string ElideLongNumbers(const std::string& msg) {
  constexpr size_t kMax = 32, kKeep = 20;
  std::string out;
  size_t i = 0;
  while (i < msg.size()) {
    if (msg[i] < '0' || msg[i] > '9') {
      out += msg[i++];
      continue;
    }
    size_t j = i;
    while (j < msg.size() && msg[j] >= '0' && msg[j] <= '9') ++j;
    if (j - i > kMax) {
      out.append(msg, i, kKeep);
      out += "...(" + std::to_string(j - i) + " digits)";
    } else {
      out.append(msg, i, j - i);
    }
    i = j;
  }
  return out;
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
