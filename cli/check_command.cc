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
  auto allow_oom = std::make_shared<bool>(false);
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
  check->add_flag("--allow-oom", *allow_oom,
                  "Exit 0 for a layout that does not fit in GPU memory (as `run --allow-oom` "
                  "simulates it); without it such a layout exits 2, as `run` would");
  check->callback([options, presets, quiet, headroom, allow_oom, exit_code] {
    if (*presets) {
      // The list is the catalogue's: a scenario, --set or --memory-headroom would be ignored
      // in silence.
      const std::string ignored = !options->path.empty()   ? "the scenario " + options->path
                                  : !options->sets.empty() ? std::string("--set")
                                  : !headroom->empty()     ? std::string("--memory-headroom")
                                                           : std::string();
      if (!ignored.empty()) {
        *exit_code = ReportError(Status::InvalidArgument(
            "--presets lists the model presets and reads no scenario: drop " + ignored));
        return;
      }
      std::cout << report::FormatPresetList(options->json);
      *exit_code = kExitOk;
      return;
    }
    if (!headroom->empty()) options->sets.push_back("cluster.memory_headroom=" + *headroom);
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
    // A file `run` would refuse is not a valid scenario for it: the same message and exit code.
    const Status fit = *allow_oom ? Status::Ok() : report::CheckFit(*resolved);
    *exit_code = fit.ok() ? kExitOk : ReportError(fit);
  });
}

}  // namespace trainsim::cli
