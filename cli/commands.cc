#include "cli/commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include "cli/report/format.h"
#include "sweep/distributed.h"

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

Result<std::optional<report::WebLibraries>> PrepareHtml(const std::string& path,
                                                        const std::vector<InputFile>& inputs,
                                                        const std::vector<InputFile>& outputs) {
  if (path.empty()) return std::optional<report::WebLibraries>();
  Result<report::WebLibraries> libs = report::LoadWebLibraries();
  if (!libs.ok()) return libs.status();
  TRAINSIM_RETURN_IF_ERROR(CheckOutput("--html", path, inputs));
  std::vector<InputFile> all = outputs;
  all.push_back({"--html", path});
  TRAINSIM_RETURN_IF_ERROR(CheckDistinctOutputs(all));
  return std::optional<report::WebLibraries>(std::move(*libs));
}

bool IsMessageRank() { return sweep::LaunchRank() == 0; }

namespace {
std::string& KeptError() {
  static std::string kept;
  return kept;
}
}  // namespace

void SayError(const std::string& text) {
  if (IsMessageRank()) {
    std::cerr << "trainsim: error: " << text;
    if (text.empty() || text.back() != '\n') std::cerr << "\n";
  } else if (KeptError().empty()) {
    KeptError() = text;
  }
}

int FinishRank(int code) {
  if (code == kExitOk || IsMessageRank() || KeptError().empty()) return code;
  std::cerr.flush();
  // mpirun ends this process (SIGTERM) once rank 0 has exited with the same error.
  for (int tenth = 0; tenth < 10 * kFollowerGraceSeconds; ++tenth) {
    ::usleep(100 * 1000);
  }
  std::cerr << "trainsim: error: (rank " << sweep::LaunchRank() << ") " << KeptError();
  if (KeptError().back() != '\n') std::cerr << "\n";
  return code;
}

int ReportError(const Status& status) {
  // Under mpirun every rank reads the same input and meets the same bad input: rank 0 says it.
  // What only one rank may see (a bug, a rank that stopped answering) every rank says.
  const bool rank_specific =
      status.code() == Status::Code::kInternal || status.code() == Status::Code::kUnavailable;
  if (!rank_specific) {
    SayError(ElideLongNumbers(status.message()));
  } else if (IsMessageRank()) {
    std::cerr << "trainsim: error: " << ElideLongNumbers(status.message()) << "\n";
  } else {
    std::cerr << "trainsim: error: (rank " << sweep::LaunchRank() << ") "
              << ElideLongNumbers(status.message()) << "\n";
  }
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

Status CheckOutput(const std::string& option, const std::string& path,
                   const std::vector<InputFile>& inputs) {
  if (path.empty()) {
    return Status::InvalidArgument(option +
                                   " was given an empty file name; name the file to write");
  }
  Result<sim::OutputTarget> target = sim::ClassifyOutput(path);
  if (!target.ok()) return target.status().WithPrefix(option);
  // The same file as an input, whatever the spelling (a link, ./x, a hard link): writing it
  // would destroy the input. stat follows links, so a link to the scenario is caught too.
  struct stat out;
  if (::stat(path.c_str(), &out) != 0) return Status::Ok();  // a new file is no input
  for (const InputFile& in : inputs) {
    struct stat st;
    if (in.path.empty() || ::stat(in.path.c_str(), &st) != 0) continue;
    if (st.st_dev == out.st_dev && st.st_ino == out.st_ino && S_ISREG(st.st_mode)) {
      return Status::InvalidArgument(option + " names " + in.what + " (" + path +
                                     "); write the output to another file");
    }
  }
  return Status::Ok();
}

CLI::Validator NumberAbove(double lo, double hi, const std::string& what) {
  return CLI::Validator(
      [lo, hi, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || !(v > lo && v <= hi)) {
          return "must be " + what + " above " + report::Fmt("%g", lo) + " and at most " +
                 report::Fmt("%g", hi) + ", got '" + text + "'";
        }
        return "";
      },
      "NUMBER");
}

CLI::Validator NonEmptyFileName() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "was given an empty file name; name the file to write" : "";
      },
      "FILE");
}

Status CheckDistinctOutputs(const std::vector<InputFile>& outputs) {
  namespace fs = std::filesystem;
  auto same = [](const std::string& a, const std::string& b) {
    struct stat sa, sb;
    const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && S_ISREG(sa.st_mode);
    if (ea != eb) return false;  // one exists, the other does not: not one file
    std::error_code ca, cb;
    const fs::path pa = fs::weakly_canonical(a, ca), pb = fs::weakly_canonical(b, cb);
    return !ca && !cb && pa == pb;
  };
  for (size_t j = 1; j < outputs.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (outputs[i].path.empty() || outputs[j].path.empty()) continue;
      if (!same(outputs[i].path, outputs[j].path)) continue;
      return Status::InvalidArgument(outputs[j].what + " names the same file as " +
                                     outputs[i].what + " (" + outputs[j].path +
                                     "); write each output to its own file");
    }
  }
  return Status::Ok();
}

Status OpenOutput(const std::string& option, const std::string& path,
                  const std::vector<InputFile>& inputs, sim::AtomicFileWriter* writer) {
  TRAINSIM_RETURN_IF_ERROR(CheckOutput(option, path, inputs));
  return writer->Open(path).WithPrefix(option);
}

namespace {

int ReportException(const std::string& message, int code) {
  if (code == kExitFailure) {
    std::cerr << "trainsim: error: " << ElideLongNumbers(message) << "\n";
  } else {
    SayError(ElideLongNumbers(message));
  }
  return code;
}

}  // namespace

int RunGuarded(const std::function<int()>& body) {
  int code = kExitFailure;
  try {
    code = body();
  } catch (const std::bad_alloc& e) {
    code = ReportException(std::string("out of memory (") + e.what() +
                               "): the input asks for more memory than this machine has; make "
                               "the cluster, the model or --trials smaller",
                           kExitBadInput);
  } catch (const std::length_error& e) {
    code = ReportException(std::string("a size too large for this machine (") + e.what() +
                               "); make the cluster, the model or --trials smaller",
                           kExitBadInput);
  } catch (const std::exception& e) {
    code = ReportException(std::string("internal error: ") + e.what() +
                               " (a bug in trainsim; please report it with the command line)",
                           kExitFailure);
  } catch (...) {
    code =
        ReportException("internal error: an unknown exception (a bug in trainsim)", kExitFailure);
  }
  // Standard output is buffered: the last writes happen here, and so do their errors.
  // errno is not cleared first: when stdio already met the error while printing (and dropped
  // its buffer), the failed write's errno (ENOSPC) is still the last one set.
  std::cout.flush();
  const bool flush_failed = std::fflush(stdout) != 0;
  const int err = errno;
  if (flush_failed || std::ferror(stdout) || !std::cout.good()) {
    std::cerr << "trainsim: error: cannot write standard output: "
              << std::strerror(err != 0 ? err : EIO) << "\n";
    if (code == kExitOk) code = kExitBadInput;
  }
  return code;
}

}  // namespace trainsim::cli
