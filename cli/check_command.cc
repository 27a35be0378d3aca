#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/report/check_report.h"

namespace trainsim::cli {

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ScenarioOptions>();
  CLI::App* check = app.add_subcommand(
      "check", "Validate a scenario and print it resolved: defaults filled, derived values shown");
  AddScenarioOptions(check, options.get());
  check->callback([options, exit_code] {
    auto resolved = LoadResolvedScenario(*options);
    if (!resolved.ok()) {
      *exit_code = ReportError(resolved.status());
      return;
    }
    std::cout << (options->json ? report::FormatCheckJson(*resolved)
                                : report::FormatCheckReport(*resolved));
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
