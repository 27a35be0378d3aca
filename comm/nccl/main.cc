// trainsim-nccl-calibrate: measures NCCL collectives and cuBLASLt matrix products on this
// machine's GPUs and writes a trainsim calibration file (see RunnerUsage() and
// docs/calibration.md). Exit codes: 0 done; 2 bad input, no GPU, a CUDA/NCCL/cuBLAS error, a
// wrong result or a timeout.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "comm/nccl/gpu_bench.h"
#include "comm/nccl/process_group.h"
#include "comm/nccl/report.h"
#include "comm/nccl/runner_options.h"

namespace {

using trainsim::Status;
namespace nccl = trainsim::comm::nccl;

constexpr int kExitError = 2;

// Ends the process if the whole run outlives --deadline-s: the last line of defence against a
// hang that the per-call timeouts cannot catch (a driver call that never returns).
void StartWatchdog(double deadline_s) {
  std::thread([deadline_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(deadline_s));
    std::fprintf(stderr,
                 "trainsim-nccl-calibrate: the run exceeded --deadline-s %.0f s; giving up\n",
                 deadline_s);
    std::fflush(stderr);
    _exit(kExitError);
  }).detach();
}

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int Fail(const nccl::ProcessGroup* group, const Status& st) {
  std::cerr << "trainsim-nccl-calibrate: " << st.message() << std::endl;
  if (group) {
    group->Abort(kExitError);
    group->Finalize();
  }
  return kExitError;
}

// Writes through a temporary file so that an interrupted run never leaves half a calibration.
Status WriteReport(const nccl::Report& report, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Status::NotFound(path + ": cannot write the calibration file");
    nccl::WriteJson(report, out);
    out.flush();
    if (!out) return Status::NotFound(path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::NotFound(path + ": cannot rename " + tmp + " into place");
  }
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  auto group = nccl::ProcessGroup::Init(&argc, &argv);
  if (!group.ok()) return Fail(nullptr, group.status());
  auto opts = nccl::ParseRunnerArgs(argc, argv);
  if (!opts.ok()) return Fail(&*group, opts.status());
  if (opts->help) {
    if (group->is_root()) std::cout << nccl::RunnerUsage();
    group->Finalize();
    return 0;
  }
  StartWatchdog(opts->deadline_s);

  auto env = nccl::ProbeGpus();
  if (!env.ok()) return Fail(&*group, env.status());
  if (opts->probe) {
    if (group->is_root()) {
      for (const nccl::DeviceInfo& d : env->devices) {
        std::cout << "GPU " << d.index << ": " << d.name << " (compute capability " << d.cc_major
                  << "." << d.cc_minor << ", " << (d.memory_bytes >> 20) << " MiB)\n";
      }
      std::cout << "CUDA runtime " << env->cuda_runtime << ", driver supports CUDA "
                << env->cuda_driver << ", NCCL " << env->nccl << "\n";
    }
    group->Finalize();
    return 0;
  }
  const std::string& gpu = env->devices[0].name;
  if (!opts->expect_gpu.empty() && !nccl::GpuNameMatches(gpu, opts->expect_gpu)) {
    return Fail(&*group,
                Status::FailedPrecondition("the GPUs here are \"" + gpu +
                                           "\", not the expected \"" + opts->expect_gpu + "\""));
  }

  // Local GPUs: every visible one in a single process (as many as the largest --nranks), or the
  // node-local rank's under MPI.
  const int visible = static_cast<int>(env->devices.size());
  std::vector<int> local;
  if (group->mpi()) {
    if (group->local_rank() >= visible) {
      return Fail(&*group,
                  Status::FailedPrecondition(
                      "node-local rank " + std::to_string(group->local_rank()) + " has no GPU (" +
                      std::to_string(visible) + " visible): start at most one process per GPU"));
    }
    local.push_back(group->local_rank());
  } else {
    int want = visible;
    if (!opts->nranks.empty()) {
      want = 0;
      for (int n : opts->nranks) want = std::max(want, n);
      if (want > visible) {
        return Fail(&*group,
                    Status::InvalidArgument("--nranks " + std::to_string(want) + ": only " +
                                            std::to_string(visible) + " GPU(s) are visible"));
      }
    }
    for (int i = 0; i < want; ++i) local.push_back(i);
  }

  nccl::Report report;
  report.gpu_name = gpu;
  report.gpu_count = group->mpi() ? group->size() : static_cast<int>(local.size());
  report.compute_capability =
      std::to_string(env->devices[0].cc_major) + "." + std::to_string(env->devices[0].cc_minor);
  report.nccl_version = env->nccl;
  report.cuda_version = env->cuda_runtime;
  report.driver_version = env->cuda_driver;
  report.date = UtcNow();
  report.note = "measured by trainsim-nccl-calibrate: warm-up " + std::to_string(opts->warmup) +
                ", median of " + std::to_string(opts->repeats) + " timed batches" +
                (opts->check ? ", results checked" : ", results not checked");
  if (group->is_root()) {
    std::cout << "# trainsim-nccl-calibrate: " << report.gpu_count << " x " << gpu << " (sm "
              << report.compute_capability << "), NCCL " << env->nccl << ", CUDA runtime "
              << env->cuda_runtime << ", driver CUDA " << env->cuda_driver
              << (group->mpi() ? ", MPI ranks " + std::to_string(group->size()) + " on " +
                                     std::to_string(group->nodes()) + " node(s)"
                               : "")
              << "\n";
  }
  Status st = nccl::RunCollectives(*opts, *env, local, *group, &report, std::cout);
  if (!st.ok()) return Fail(&*group, st);
  if (group->is_root()) {
    st = nccl::RunGemms(*opts, *env, local[0], &report, std::cout);
    if (!st.ok()) return Fail(&*group, st);
    if (!opts->output.empty()) {
      st = WriteReport(report, opts->output);
      if (!st.ok()) return Fail(&*group, st);
      std::cout << "# wrote " << opts->output << " (" << report.collectives.size()
                << " collective rows, " << report.gemms.size() << " GEMM rows)\n";
    }
  }
  group->Finalize();
  return 0;
}
