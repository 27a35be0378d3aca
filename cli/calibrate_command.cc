#include <spawn.h>
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
  std::string runner;
  scenarios::CalibrateRequest request;
};

constexpr char kRunnerName[] = "trainsim-nccl-calibrate";

// The runner: --runner, $TRAINSIM_NCCL_CALIBRATE, or next to this executable.
Result<std::string> FindRunner(const std::string& flag) {
  if (!flag.empty()) {
    if (access(flag.c_str(), X_OK) != 0) {
      return Status::InvalidArgument("--runner " + flag + ": not an executable file");
    }
    return flag;
  }
  if (const char* env = std::getenv("TRAINSIM_NCCL_CALIBRATE"); env && *env) {
    if (access(env, X_OK) != 0) {
      return Status::InvalidArgument(std::string("TRAINSIM_NCCL_CALIBRATE=") + env +
                                     ": not an executable file");
    }
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
    return Status::Unavailable("cannot start " + runner + ": " + std::strerror(rc));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::Internal(std::string("waitpid: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int Run(const ScenarioOptions& so, const CalibrateOptions& co, bool dry_run) {
  auto resolved = LoadResolvedScenario(so);
  if (!resolved.ok()) return ReportError(resolved.status());
  const std::string output =
      co.output.empty() ? scenarios::DefaultCalibrationPath(so.path) : co.output;
  auto args = scenarios::CalibrateRunnerArgs(*resolved, co.request, output);
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
  auto rc = Spawn(*runner, *args);
  if (!rc.ok()) return ReportError(rc.status());
  if (*rc != 0) {
    return ReportError(Status::InvalidArgument(
        std::string(kRunnerName) + " failed (exit code " + std::to_string(*rc) +
        "); its message is above. Nothing was written to " + output));
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
