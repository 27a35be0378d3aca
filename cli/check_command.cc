#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/report/check_report.h"

namespace trainsim::cli {

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ScenarioOptions>();
  auto presets = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto headroom = std::make_shared<std::string>();
  CLI::App* check = app.add_subcommand(
      "check", "Validate a scenario and print it resolved: defaults filled, derived values shown");
  AddScenarioOptions(check, options.get());
  // `check --presets` lists the model presets and needs no scenario.
  check->get_option("SCENARIO")->required(false);
  check->add_flag("--presets", *presets,
                  "List the model presets (model { preset: \"NAME\" }) with their shapes and "
                  "parameter counts, and exit");
  check->add_flag("--quiet,-q", *quiet,
                  "Print the summary only, without the resolved scenario (text output; the JSON "
                  "is unchanged)");
  check
      ->add_option("--memory-headroom", *headroom,
                   "HBM to keep free beyond the memory model's peak: a fraction (0.05), a "
                   "percentage (5%) or a size (4GB) (default: cluster.memory_headroom, else none)")
      ->type_name("F|P%|NGB");
  check->callback([options, presets, quiet, headroom, exit_code] {
    if (!headroom->empty()) options->sets.push_back("cluster.memory_headroom=" + *headroom);
    if (*presets) {
      std::cout << report::FormatPresetList(options->json);
      *exit_code = kExitOk;
      return;
    }
    if (options->path.empty()) {
      *exit_code = ReportError(
          Status::InvalidArgument("SCENARIO is required (or --presets to list the model presets)"));
      return;
    }
    auto resolved = LoadResolvedScenario(*options);
    if (!resolved.ok()) {
      *exit_code = ReportError(resolved.status());
      return;
    }
    std::cout << (options->json ? report::FormatCheckJson(*resolved)
                                : report::FormatCheckReport(*resolved, !*quiet));
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
