#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/report/validate_report.h"
#include "scenarios/step_config.h"

namespace trainsim::cli {

void AddValidateCommand(CLI::App& app, int* exit_code) {
  struct Options {
    // From the repository root the bundled rows are found as-is; elsewhere, in the source tree
    // this binary was built from.
    std::string dir = std::filesystem::is_directory("scenarios/validation")
                          ? "scenarios/validation"
                          : std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation";
    std::vector<std::string> sets;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Predict every published run in scenarios/validation/ and report the errors");
  cmd->add_option("--dir", opts->dir, "Directory of validation scenarios")->capture_default_str();
  cmd->add_option("--set", opts->sets, "Override a field in every scenario (repeatable)")
      ->take_all()
      ->allow_extra_args(false)
      ->type_name("PATH=VALUE");
  cmd->add_flag("--json", opts->json, "Print JSON instead of a table");
  cmd->callback([opts, exit_code] {
    Result<std::vector<scenarios::ValidationRow>> rows =
        scenarios::RunValidation(opts->dir, opts->sets);
    if (!rows.ok()) {
      *exit_code = ReportError(rows.status());
      return;
    }
    std::cout << (opts->json ? report::FormatValidationJson(*rows)
                             : report::FormatValidationTable(*rows));
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
