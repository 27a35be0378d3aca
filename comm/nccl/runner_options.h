// Options of the NCCL/cuBLAS calibration runner (trainsim-nccl-calibrate) and their parser.
//
// The runner parses its own arguments (no CLI11: it must build on GPU machines that have only
// the CUDA toolkit, NCCL, CMake and a compiler). Every option is checked here, before any GPU is
// touched, so that bad input gives one clear message and exit code 2 without a CUDA context.
// Invariants of a parsed RunnerOptions: 1 <= min_bytes <= max_bytes <= kMaxCollectiveBytes,
// step_factor >= 2, repeats/warmup within their ranges, every GEMM dimension in [1, 2^20].
#ifndef TRAINSIM_COMM_NCCL_RUNNER_OPTIONS_H_
#define TRAINSIM_COMM_NCCL_RUNNER_OPTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace trainsim::comm::nccl {

// 8 GiB: the largest buffer nccl-tests is commonly run with; each rank holds two of them.
inline constexpr int64_t kMaxCollectiveBytes = int64_t{8} << 30;
inline constexpr int64_t kMaxGemmDim = int64_t{1} << 20;

struct GemmSpec {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string name;  // optional role ("qkv"), carried into the report
};

struct RunnerOptions {
  bool help = false;
  bool probe = false;  // list the GPUs and exit: 0 when at least one is usable, 2 otherwise
  // Collectives, in nccl-tests' names: all_reduce, reduce_scatter, all_gather, broadcast,
  // send_recv. Empty = none.
  std::vector<std::string> ops = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                  "send_recv"};
  // NCCL_ALGO values for all_reduce, one communicator each (ring, tree). The other collectives
  // run on the ring communicator; send_recv has no algorithm.
  std::vector<std::string> algos = {"ring", "tree"};
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{1} << 30;
  int64_t step_factor = 2;
  // Group sizes to measure (single-process mode: the first k visible GPUs). Empty = all GPUs.
  std::vector<int> nranks;
  int warmup = 5;   // untimed calls per size before timing
  int repeats = 5;  // timed batches per size; the median is reported
  int iters = 0;    // calls per timed batch; 0 = by size (20 up to 1 MiB, 5 up to 64 MiB, else 1)
  bool check = true;
  std::vector<GemmSpec> gemms;
  std::vector<std::string> dtypes = {"bf16", "fp8"};
  std::string expect_gpu;    // when set, refuse to run on a GPU whose name does not match
  std::string output;        // calibration JSON path; empty = table only
  double timeout_s = 60;     // one collective or GEMM batch; then the communicator is aborted
  double deadline_s = 1800;  // the whole run (watchdog)
};

// Parses argv[1..argc). Errors (InvalidArgument) name the option and what would be valid.
Result<RunnerOptions> ParseRunnerArgs(int argc, const char* const* argv);
std::string RunnerUsage();

// "8", "64K", "1M", "1G", "1GiB", "4KB" (binary multiples, as nccl-tests' -b/-e).
Result<int64_t> ParseBytes(std::string_view text);
// "2048x4608x12288" or "MxNxKxBATCH", several separated by commas; an optional "name=" prefix
// per shape ("qkv=2048x4608x12288").
Result<std::vector<GemmSpec>> ParseGemmList(std::string_view text);

// The sizes measured: min, min·f, min·f², … up to max inclusive.
std::vector<int64_t> SizeLadder(const RunnerOptions& o);
// Calls per timed batch for a size (RunnerOptions::iters, or the size rule).
int ItersFor(const RunnerOptions& o, int64_t bytes);

// Does a device name ("NVIDIA H100 80GB HBM3") match a wanted GPU ("H100-SXM-80GB", "h100")?
// The same rule as comm::Calibration::CheckGpu: the wanted name's model word (letters then
// digits) must be a word of the device name; without one, a case-insensitive substring.
bool GpuNameMatches(std::string_view device_name, std::string_view wanted);

}  // namespace trainsim::comm::nccl

#endif  // TRAINSIM_COMM_NCCL_RUNNER_OPTIONS_H_
