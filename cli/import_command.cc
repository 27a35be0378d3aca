// `trainsim import hf CONFIG.json [--name NAME]`: the scenario `model { }` block of a Hugging
// Face config.json (scenarios/presets.h ModelFromHfConfig), printed in text format with what
// the mapping could not express as comments.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "scenarios/presets.h"
#include "sim/read_at_most.h"

namespace trainsim::cli {
namespace {

struct ImportOptions {
  std::string format;
  std::string path;
  std::string name;
};

int RunImport(const ImportOptions& o) {
  if (o.format != "hf") {
    return ReportError(
        Status::InvalidArgument("unknown import format \"" + o.format + "\" (formats: hf)"));
  }
  std::error_code ec;
  if (std::filesystem::is_directory(o.path, ec)) {
    return ReportError(Status::InvalidArgument(o.path + ": is a directory; name its config.json"));
  }
  std::ifstream in(o.path, std::ios::binary);
  if (!in) return ReportError(Status::NotFound(o.path + ": cannot read the file"));
  // A config.json is a few KiB (16 MiB: the scenario file's limit).
  const BoundedRead read = ReadAtMost(in, size_t{16} << 20);
  if (read.failed) return ReportError(Status::InvalidArgument(o.path + ": read error"));
  if (read.too_large) {
    return ReportError(Status::InvalidArgument(
        o.path + ": larger than 16 MiB; a Hugging Face config.json is a few KiB"));
  }
  std::vector<std::string> notes;
  auto model = scenarios::ModelFromHfConfig(read.body, o.path, &notes);
  if (!model.ok()) return ReportError(model.status());
  if (!o.name.empty()) model->set_name(o.name);
  std::cout << "# trainsim import hf " << o.path << "\n";
  for (const std::string& note : notes) std::cout << "# note: " << note << "\n";
  std::cout << scenarios::FormatModelBlock(*model);
  return kExitOk;
}

}  // namespace

void AddImportCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Print the scenario model { } block of a published model config (hf: a Hugging "
      "Face config.json)");
  cmd->add_option("FORMAT", options->format, "Config format: hf (Hugging Face config.json)")
      ->required();
  cmd->add_option("CONFIG", options->path, "The config file, e.g. config.json")->required();
  cmd->add_option("--name", options->name, "model.name to print (default: the model_type)");
  cmd->callback([options, exit_code] { *exit_code = RunImport(*options); });
}

}  // namespace trainsim::cli
