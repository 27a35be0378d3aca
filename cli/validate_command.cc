#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/report/html_pages.h"
#include "cli/report/html_report.h"
#include "cli/report/validate_report.h"
#include "scenarios/step_config.h"
#include "sim/parallel.h"

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
    std::string html;
    int threads = 0;  // 0 = all cores (sim::ResolveThreads)
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
  cmd->add_option(
         "--threads", opts->threads,
         "Simulate the rows on this many threads (default 0 = all cores); the output is the same "
         "at any count")
      ->check(CLI::Range(0, sim::kMaxThreads));

  cmd->add_option("--html", opts->html,
                  "Also write a self-contained HTML report with plots to FILE (docs/report.md)")
      ->type_name("FILE")
      ->check(NonEmptyFileName());
  cmd->callback([opts, exit_code] {
    Result<std::optional<report::WebLibraries>> html = PrepareHtml(opts->html, {});
    if (!html.ok()) {
      *exit_code = ReportError(html.status());
      return;
    }
    std::optional<report::WebLibraries> web = std::move(*html);
    Result<int> threads = sim::ResolveThreads(opts->threads);
    if (!threads.ok()) {
      *exit_code = ReportError(threads.status());
      return;
    }
    Result<std::vector<scenarios::ValidationRow>> rows =
        scenarios::RunValidation(opts->dir, opts->sets, *threads);
    if (!rows.ok()) {
      *exit_code = ReportError(rows.status());
      return;
    }
    if (web) {
      // The very document --json prints, parsed back.
      const nlohmann::json doc = nlohmann::json::parse(report::FormatValidationJson(*rows));
      Status st = report::WriteHtml(opts->html, report::ValidateHtmlPage(doc), *web);
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    std::cout << (opts->json ? report::FormatValidationJson(*rows)
                             : report::FormatValidationTable(*rows));
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
