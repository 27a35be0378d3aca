#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "comm/calibration.h"
#include "scenarios/session.h"

extern char** environ;

namespace trainsim::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  std::string output;  // default: <scenario stem>.calibration.json in the working directory
  CLI::Option* output_option = nullptr;  // to tell -o '' from no -o
  std::string runner;
  scenarios::CalibrateRequest request;
};

constexpr char kRunnerName[] = "trainsim-nccl-calibrate";

// A runner named by the user must be an executable regular file: a directory passes
// access(X_OK) (it is searchable) and would only fail at posix_spawn.
Status CheckRunner(const std::string& what, const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument(what + ": " + std::strerror(errno) +
                                   " (name the trainsim-nccl-calibrate executable)");
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(what +
                                   ": is a directory; name the trainsim-nccl-calibrate "
                                   "executable in it");
  }
  if (!S_ISREG(st.st_mode) || access(path.c_str(), X_OK) != 0) {
    return Status::InvalidArgument(what + ": not an executable file");
  }
  return Status::Ok();
}

// The runner: --runner, $TRAINSIM_NCCL_CALIBRATE, or next to this executable.
Result<std::string> FindRunner(const std::string& flag) {
  if (!flag.empty()) {
    TRAINSIM_RETURN_IF_ERROR(CheckRunner("--runner " + flag, flag));
    return flag;
  }
  if (const char* env = std::getenv("TRAINSIM_NCCL_CALIBRATE"); env && *env) {
    TRAINSIM_RETURN_IF_ERROR(CheckRunner(std::string("TRAINSIM_NCCL_CALIBRATE=") + env, env));
    return std::string(env);
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path next = self.parent_path() / kRunnerName;
    if (access(next.c_str(), X_OK) == 0) return next.string();
  }
  return Status::Unavailable(
      std::string(kRunnerName) +
      " was not found next to trainsim: it is built when CMake finds the CUDA toolkit and NCCL "
      "(-DTRAINSIM_WITH_CUDA=AUTO or ON), or on its own with scripts/gpu-check.sh; point "
      "--runner or TRAINSIM_NCCL_CALIBRATE at it");
}

std::string ShellQuote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) ||
                      std::strchr("-_./=,:+@%", c) != nullptr);
  }
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs the runner with our stdout/stderr; its exit status, or an error if it could not start.
Result<int> Spawn(const std::string& runner, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  std::vector<std::string> all = {runner};
  all.insert(all.end(), args.begin(), args.end());
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, runner.c_str(), nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    // The runner was checked to be an executable regular file; what still fails here (not a
    // program this machine runs, ENOEXEC) is the named file's fault.
    return Status::InvalidArgument("cannot start " + runner + ": " + std::strerror(rc));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::Internal(std::string("waitpid: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// What is at `path` now, to tell afterwards whether the runner left a file there.
struct FileStamp {
  bool exists = false;
  struct stat st {};
};
FileStamp Stamp(const std::string& path) {
  FileStamp f;
  f.exists = ::stat(path.c_str(), &f.st) == 0;
  return f;
}
bool Changed(const FileStamp& before, const FileStamp& after) {
  if (before.exists != after.exists) return true;
  if (!after.exists) return false;
  return before.st.st_ino != after.st.st_ino || before.st.st_size != after.st.st_size ||
         before.st.st_mtim.tv_sec != after.st.st_mtim.tv_sec ||
         before.st.st_mtim.tv_nsec != after.st.st_mtim.tv_nsec;
}

int Run(const ScenarioOptions& so, const CalibrateOptions& co, bool dry_run) {
  auto resolved = LoadResolvedScenario(so);
  if (!resolved.ok()) return ReportError(resolved.status());
  const bool output_given = co.output_option != nullptr && co.output_option->count() > 0;
  const std::string output = output_given ? co.output : scenarios::DefaultCalibrationPath(so.path);
  // The runner writes the file; its path is checked here, before minutes of measuring.
  Status out_ok = CheckOutput("--output", output, {{"the input scenario", so.path}});
  if (!out_ok.ok()) return ReportError(out_ok);
  // The runner writes a temporary file and renames it over the name it is given, and the file is
  // read back afterwards: so it gets the final target of a link (the link is kept), and a device
  // or FIFO, which it would replace and which cannot be read back, is refused.
  Result<sim::OutputTarget> target = sim::ClassifyOutput(output);
  if (!target.ok()) return ReportError(target.status().WithPrefix("--output"));
  if (target->kind != sim::OutputTarget::Kind::kReplace) {
    return ReportError(Status::InvalidArgument(
        "--output " + output +
        ": a calibration is read back after it is measured, so it must be a regular file, not "
        "a device, FIFO or standard stream"));
  }
  auto args = scenarios::CalibrateRunnerArgs(*resolved, co.request, target->path);
  if (!args.ok()) return ReportError(args.status());
  if (dry_run) {
    std::cout << ShellQuote(co.runner.empty() ? kRunnerName : co.runner);
    for (const std::string& a : *args) std::cout << " " << ShellQuote(a);
    std::cout << "\n";
    return kExitOk;
  }
  auto runner = FindRunner(co.runner);
  if (!runner.ok()) return ReportError(runner.status());
  std::cout.flush();
  const FileStamp before = Stamp(output);
  auto rc = Spawn(*runner, *args);
  if (!rc.ok()) return ReportError(rc.status());
  if (*rc != 0) {
    const bool left = Changed(before, Stamp(output));
    return ReportError(Status::InvalidArgument(
        std::string(kRunnerName) + " failed (exit code " + std::to_string(*rc) +
        "); see its output above. " +
        (left ? "It left " + output + ", which may be incomplete: do not use it"
              : "Nothing was written to " + output)));
  }
  // Exit 0 without a file: a wrong --runner (another program), not a measurement.
  if (!Changed(before, Stamp(output))) {
    return ReportError(Status::InvalidArgument(*runner + " exited 0 but wrote nothing to " +
                                               output + "; is it " + kRunnerName +
                                               "? (--runner, or $TRAINSIM_NCCL_CALIBRATE)"));
  }
  auto cal = comm::LoadCalibration(output);
  if (!cal.ok()) return ReportError(cal.status());
  Status gpu = cal->CheckGpu(resolved->gpu.name());
  if (!gpu.ok()) return ReportError(gpu);
  std::cout << "Calibration written to " << output << ": " << cal->collectives().size()
            << " collective rows and " << cal->gemms().size() << " GEMM rows measured on "
            << cal->gpu_count() << " x " << cal->gpu_name() << " (NCCL " << cal->nccl_version()
            << ", CUDA " << cal->cuda_version() << ").\nUse it with cluster { calibration: \""
            << output << "\" } in the scenario, or --calibration " << output << ".\n";
  return kExitOk;
}

}  // namespace

void AddCalibrateCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Measure this machine's GPUs (NCCL collectives, cuBLASLt matrix products of the "
      "scenario's layer) and write a calibration file for cluster.calibration");
  auto so = std::make_shared<ScenarioOptions>();
  auto co = std::make_shared<CalibrateOptions>();
  auto dry_run = std::make_shared<bool>(false);
  AddScenarioOptions(cmd, so.get());
  co->output_option =
      cmd->add_option("-o,--output", co->output,
                      "Calibration file to write (default: <scenario>.calibration.json)");
  cmd->add_option("--nranks", co->request.nranks,
                  "Group sizes to measure, e.g. 2,4,8 (default: all visible GPUs)");
  cmd->add_flag("--quick", co->request.quick, "Short run: sizes 8 B..1 GiB by 8x, 3 repeats");
  cmd->add_option("--runner", co->runner,
                  "Path of trainsim-nccl-calibrate (default: next to trainsim, or "
                  "$TRAINSIM_NCCL_CALIBRATE)");
  cmd->add_flag("--dry-run", *dry_run, "Print the runner's command line and exit");
  cmd->callback([so, co, dry_run, exit_code]() { *exit_code = Run(*so, *co, *dry_run); });
}

}  // namespace trainsim::cli
