// NCCL collective benchmark: see gpu_bench.h for what it promises.
//
// Never hangs: NCCL communicators are non-blocking; the runner polls ncclCommGetAsyncError and
// cudaEventQuery and calls ncclCommAbort when the deadline passes, then returns an error.
// Checks results: collective inputs are rank-dependent small integers held in floats, so every
// sum is exact and each output element has one right value.
// NCCL_ALGO is read when a communicator is initialised, so each algorithm gets its own
// communicator created with NCCL_ALGO set.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "comm/nccl/cuda_status.h"
#include "comm/nccl/gpu_bench.h"

namespace trainsim::comm::nccl {
namespace {

using Clock = std::chrono::steady_clock;

// Inputs: rank r holds (i mod 127) + 1 + r at index i. Sums over up to thousands of ranks stay
// small integers, exact in float, so each output element has exactly one right value.
constexpr int64_t kPeriod = 127;
float InputValue(int rank, int64_t i) { return static_cast<float>(i % kPeriod + 1 + rank); }

float Expected(const std::string& op, int n, int r, int64_t count, int64_t i) {
  const float ranks_sum = static_cast<float>(n) * static_cast<float>(n - 1) / 2;
  if (op == "all_reduce")
    return static_cast<float>(n) * static_cast<float>(i % kPeriod + 1) + ranks_sum;
  if (op == "broadcast") return InputValue(0, i);
  if (op == "reduce_scatter") {
    int64_t j = static_cast<int64_t>(r) * count + i;
    return static_cast<float>(n) * static_cast<float>(j % kPeriod + 1) + ranks_sum;
  }
  if (op == "all_gather") return InputValue(static_cast<int>(i / count), i % count);
  return InputValue((r - 1 + n) % n, i);  // send_recv: ring neighbour's input
}

// Sets an environment variable for the lifetime of the object and restores the caller's value.
class EnvOverride {
 public:
  EnvOverride(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~EnvOverride() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  EnvOverride(const EnvOverride&) = delete;
  EnvOverride& operator=(const EnvOverride&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// One local GPU: its stream, buffers and timing events (shared by every communicator).
struct LocalGpu {
  int device = 0;
  int rank = 0;  // rank in the largest group; groups of k ranks use ranks 0..k-1
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

class Communicators {
 public:
  Communicators() = default;
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  ~Communicators() { Destroy(); }

  Status Init(const std::string& algo, int nranks, std::vector<LocalGpu*> gpus,
              const ProcessGroup& group, double timeout_s) {
    gpus_ = std::move(gpus);
    algo_ = algo;
    // NCCL reads NCCL_ALGO while it initialises a communicator (in its own thread for a
    // non-blocking one), so it stays set until every communicator is ready.
    std::optional<EnvOverride> env;
    if (algo == "ring") env.emplace("NCCL_ALGO", "Ring");
    if (algo == "tree") env.emplace("NCCL_ALGO", "Tree");
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (group.is_root())
      TRAINSIM_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    TRAINSIM_RETURN_IF_ERROR(group.Broadcast(&id, sizeof(id)));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    comms_.assign(gpus_.size(), nullptr);
    TRAINSIM_RETURN_IF_ERROR(NcclStatus(ncclGroupStart(), "ncclGroupStart"));
    for (size_t i = 0; i < gpus_.size(); ++i) {
      TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(gpus_[i]->device), "cudaSetDevice"));
      Status st =
          NcclStatus(ncclCommInitRankConfig(&comms_[i], nranks, id, gpus_[i]->rank, &config),
                     "ncclCommInitRankConfig");
      if (!st.ok()) {
        (void)ncclGroupEnd();
        return st;
      }
    }
    TRAINSIM_RETURN_IF_ERROR(NcclStatus(ncclGroupEnd(), "ncclGroupEnd (communicator init)"));
    return WaitReady(Clock::now() + Seconds(timeout_s), "communicator initialisation");
  }

  // Polls every communicator until its pending work is enqueued; aborts them at the deadline.
  Status WaitReady(Clock::time_point deadline, const std::string& what) {
    while (true) {
      bool pending = false;
      for (ncclComm_t c : comms_) {
        ncclResult_t async = ncclSuccess;
        ncclResult_t rc = ncclCommGetAsyncError(c, &async);
        if (rc != ncclSuccess) return Fail(NcclStatus(rc, "ncclCommGetAsyncError"), c);
        if (async == ncclInProgress) {
          pending = true;
        } else if (async != ncclSuccess) {
          return Fail(NcclStatus(async, what.c_str()), c);
        }
      }
      if (!pending) return Status::Ok();
      if (Clock::now() > deadline) return TimedOut(what);
      std::this_thread::yield();
    }
  }

  // Waits for every local GPU's `stop` event, watching the communicators for errors.
  Status WaitEvents(Clock::time_point deadline, const std::string& what) {
    while (true) {
      bool pending = false;
      for (LocalGpu* g : gpus_) {
        cudaError_t e = cudaEventQuery(g->stop);
        if (e == cudaErrorNotReady) {
          pending = true;
        } else if (e != cudaSuccess) {
          return Fail(CudaStatus(e, what.c_str()), nullptr);
        }
      }
      if (!pending) return Status::Ok();
      for (ncclComm_t c : comms_) {
        ncclResult_t async = ncclSuccess;
        if (ncclCommGetAsyncError(c, &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress) {
          return Fail(NcclStatus(async, what.c_str()), c);
        }
      }
      if (Clock::now() > deadline) return TimedOut(what);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // One call of `op` on every local rank, as one NCCL group.
  Status Launch(const std::string& op, int64_t count, int nranks, Clock::time_point deadline) {
    TRAINSIM_RETURN_IF_ERROR(NcclStatus(ncclGroupStart(), "ncclGroupStart"));
    ncclResult_t rc = ncclSuccess;
    for (size_t i = 0; i < gpus_.size() && (rc == ncclSuccess || rc == ncclInProgress); ++i) {
      LocalGpu* g = gpus_[i];
      ncclComm_t c = comms_[i];
      size_t n = static_cast<size_t>(count);
      if (op == "all_reduce") {
        rc = ncclAllReduce(g->send, g->recv, n, ncclFloat, ncclSum, c, g->stream);
      } else if (op == "reduce_scatter") {
        rc = ncclReduceScatter(g->send, g->recv, n, ncclFloat, ncclSum, c, g->stream);
      } else if (op == "all_gather") {
        rc = ncclAllGather(g->send, g->recv, n, ncclFloat, c, g->stream);
      } else if (op == "broadcast") {
        rc = ncclBroadcast(g->send, g->recv, n, ncclFloat, /*root=*/0, c, g->stream);
      } else {  // send_recv: a ring, each rank to the next
        int to = (g->rank + 1) % nranks, from = (g->rank - 1 + nranks) % nranks;
        rc = ncclSend(g->send, n, ncclFloat, to, c, g->stream);
        if (rc == ncclSuccess || rc == ncclInProgress) {
          rc = ncclRecv(g->recv, n, ncclFloat, from, c, g->stream);
        }
      }
    }
    ncclResult_t end = ncclGroupEnd();
    if (rc != ncclSuccess && rc != ncclInProgress) return Fail(NcclStatus(rc, op.c_str()), nullptr);
    if (end != ncclSuccess && end != ncclInProgress) {
      return Fail(NcclStatus(end, ("ncclGroupEnd (" + op + ")").c_str()), nullptr);
    }
    return WaitReady(deadline, op);
  }

  void Destroy() {
    if (!aborted_) {
      // Finalize every communicator first (non-blocking, so one waiting on another in this
      // thread cannot deadlock), then wait for all with one bounded deadline; whatever is not
      // finalized by then is aborted rather than left to hang the exit.
      std::vector<bool> ok(comms_.size(), false);
      for (size_t i = 0; i < comms_.size(); ++i) {
        ncclResult_t rc = comms_[i] ? ncclCommFinalize(comms_[i]) : ncclInvalidArgument;
        ok[i] = rc == ncclSuccess || rc == ncclInProgress;
      }
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      bool pending = true;
      while (pending && Clock::now() < deadline) {
        pending = false;
        for (size_t i = 0; i < comms_.size(); ++i) {
          ncclResult_t async = ncclSuccess;
          if (!ok[i]) continue;
          if (ncclCommGetAsyncError(comms_[i], &async) != ncclSuccess ||
              (async != ncclSuccess && async != ncclInProgress)) {
            ok[i] = false;
          } else if (async == ncclInProgress) {
            pending = true;
          }
        }
        if (pending) std::this_thread::yield();
      }
      for (size_t i = 0; i < comms_.size(); ++i) {
        if (!comms_[i]) continue;
        if (ok[i] && !pending) {
          ncclCommDestroy(comms_[i]);
        } else {
          ncclCommAbort(comms_[i]);
        }
        comms_[i] = nullptr;
      }
    }
    for (ncclComm_t& c : comms_) {
      if (c) ncclCommAbort(c);
      c = nullptr;
    }
    comms_.clear();
  }

 private:
  static Clock::duration Seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  Status Fail(Status st, ncclComm_t c) {
    std::string detail;
    if (c) {
      const char* last = ncclGetLastError(c);
      if (last && *last) detail = std::string(" (NCCL: ") + last + ")";
    }
    AbortAll();
    return Status::Unavailable(st.message() + detail + "; algorithm " + algo_ +
                               ", communicators aborted");
  }
  Status TimedOut(const std::string& what) {
    AbortAll();
    return Status::Unavailable(what + " did not finish before the timeout (--timeout-s); " +
                               "algorithm " + algo_ +
                               ", communicators aborted. A peer GPU or process is stuck or gone, "
                               "or the timeout is too short for this size.");
  }
  void AbortAll() {
    for (ncclComm_t& c : comms_) {
      if (c) ncclCommAbort(c);
      c = nullptr;
    }
    aborted_ = true;
  }

  std::vector<LocalGpu*> gpus_;
  std::vector<ncclComm_t> comms_;
  std::string algo_;
  bool aborted_ = false;
};

// Copies `period` host floats to the start of `dst` and doubles the filled prefix with
// device-to-device copies (so the pattern repeats with that period) up to `count` floats.
Status FillTiled(float* dst, int64_t count, const std::vector<float>& host, cudaStream_t s) {
  int64_t filled = std::min<int64_t>(count, static_cast<int64_t>(host.size()));
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(dst, host.data(), filled * sizeof(float), cudaMemcpyHostToDevice, s),
      "cudaMemcpyAsync (fill)"));
  while (filled < count) {
    int64_t n = std::min(filled, count - filled);
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(dst + filled, dst, n * sizeof(float), cudaMemcpyDeviceToDevice, s),
        "cudaMemcpyAsync (fill)"));
    filled += n;
  }
  return CudaStatus(cudaStreamSynchronize(s), "cudaStreamSynchronize (fill)");
}

// Compares the output of `op` on one GPU with the expected values: every element up to 4 Mi
// elements, beyond that 64 windows of 4 Ki elements spread over the buffer (first and last
// included).
Status CheckOutput(const std::string& op, int nranks, const LocalGpu& g, int64_t count,
                   int64_t out_elems, const std::string& where) {
  constexpr int64_t kFull = int64_t{4} << 20, kWindow = 4096, kWindows = 64;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  if (out_elems <= kFull) {
    ranges.push_back({0, out_elems});
  } else {
    for (int64_t w = 0; w < kWindows; ++w) {
      int64_t begin = (out_elems - kWindow) * w / (kWindows - 1);
      ranges.push_back({begin, kWindow});
    }
  }
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(g.device), "cudaSetDevice"));
  std::vector<float> host;
  for (auto [begin, len] : ranges) {
    host.resize(static_cast<size_t>(len));
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpy(host.data(), g.recv + begin, len * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy (check)"));
    for (int64_t i = 0; i < len; ++i) {
      float want = Expected(op, nranks, g.rank, count, begin + i);
      if (host[static_cast<size_t>(i)] != want) {
        return Status::Internal(
            where + ": wrong result on rank " + std::to_string(g.rank) + " (GPU " +
            std::to_string(g.device) + "): element " + std::to_string(begin + i) + " is " +
            std::to_string(host[static_cast<size_t>(i)]) + ", expected " + std::to_string(want));
      }
    }
  }
  return Status::Ok();
}

std::string HumanBytes(int64_t b) {
  if (b >= (int64_t{1} << 30) && b % (int64_t{1} << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b >= (1 << 20) && b % (1 << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= (1 << 10) && b % (1 << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b) + "B";
}

struct Plan {
  int64_t count;       // as NCCL is called
  int64_t size_bytes;  // nccl-tests' size
  int64_t out_elems;   // output floats per rank
};

// Element counts for a requested size; nullopt when the size is too small for this op.
std::optional<Plan> PlanFor(const std::string& op, int nranks, int64_t bytes) {
  const int64_t per = bytes / static_cast<int64_t>(sizeof(float));
  if (op == "reduce_scatter" || op == "all_gather") {
    int64_t c = per / nranks;
    if (c == 0) return std::nullopt;
    int64_t total = c * nranks;
    return Plan{c, total * 4, op == "all_gather" ? total : c};
  }
  if (per == 0) return std::nullopt;
  return Plan{per, per * 4, per};
}

}  // namespace

Status RunCollectives(const RunnerOptions& o, const GpuEnvironment& env,
                      const std::vector<int>& devices, const ProcessGroup& group, Report* report,
                      std::ostream& out) {
  if (o.ops.empty()) return Status::Ok();
  if (devices.empty()) return Status::InvalidArgument("no GPU to run collectives on");
  // Group sizes.
  const int world = group.mpi() ? group.size() : static_cast<int>(devices.size());
  std::vector<int> sizes = o.nranks.empty() ? std::vector<int>{world} : o.nranks;
  for (int n : sizes) {
    if (group.mpi() && n != world) {
      return Status::InvalidArgument("--nranks " + std::to_string(n) +
                                     ": under MPI the group is "
                                     "every process (" +
                                     std::to_string(world) + " ranks)");
    }
    if (n > world) {
      return Status::InvalidArgument("--nranks " + std::to_string(n) + ": only " +
                                     std::to_string(world) + " GPUs are visible");
    }
  }
  // Buffers: two of the largest size per GPU, plus the input pattern.
  const int64_t max_elems = std::max<int64_t>(1, o.max_bytes / 4);
  std::vector<LocalGpu> gpus(devices.size());
  auto free_all = [&]() {
    for (LocalGpu& g : gpus) {
      cudaSetDevice(g.device);
      if (g.send) cudaFree(g.send);
      if (g.recv) cudaFree(g.recv);
      if (g.start) cudaEventDestroy(g.start);
      if (g.stop) cudaEventDestroy(g.stop);
      if (g.stream) cudaStreamDestroy(g.stream);
    }
  };
  struct Guard {
    decltype(free_all)& f;
    ~Guard() { f(); }
  } guard{free_all};
  for (size_t i = 0; i < devices.size(); ++i) {
    LocalGpu& g = gpus[i];
    g.device = env.devices[static_cast<size_t>(devices[i])].index;
    g.rank = group.mpi() ? group.rank() : static_cast<int>(i);
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(g.device), "cudaSetDevice"));
    size_t free_b = 0, total_b = 0;
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
    const size_t need = 2 * static_cast<size_t>(max_elems) * sizeof(float);
    if (need + (size_t{512} << 20) > free_b) {
      return Status::FailedPrecondition(
          "GPU " + std::to_string(g.device) + " has " + std::to_string(free_b >> 20) +
          " MiB free; two " + HumanBytes(o.max_bytes) +
          " buffers and NCCL's own memory do not fit: lower --max-bytes");
    }
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking),
                                        "cudaStreamCreate"));
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&g.start), "cudaEventCreate"));
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&g.stop), "cudaEventCreate"));
    TRAINSIM_RETURN_IF_ERROR(
        CudaStatus(cudaMalloc(&g.send, max_elems * sizeof(float)), "cudaMalloc (send buffer)"));
    TRAINSIM_RETURN_IF_ERROR(
        CudaStatus(cudaMalloc(&g.recv, max_elems * sizeof(float)), "cudaMalloc (recv buffer)"));
    std::vector<float> pattern(static_cast<size_t>(kPeriod * 8192));
    for (size_t j = 0; j < pattern.size(); ++j) {
      pattern[j] = InputValue(g.rank, static_cast<int64_t>(j));
    }
    TRAINSIM_RETURN_IF_ERROR(FillTiled(g.send, max_elems, pattern, g.stream));
  }

  const auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  PrintCollectiveHeader(out);
  for (int n : sizes) {
    std::vector<LocalGpu*> members;
    for (LocalGpu& g : gpus) {
      if (g.rank < n) members.push_back(&g);
    }
    if (members.empty()) continue;  // MPI ranks beyond n do not exist (n == world there)
    // Which communicators are needed: ring for the ring all-reduce and every other collective,
    // tree for the tree all-reduce.
    bool has_ar = std::find(o.ops.begin(), o.ops.end(), "all_reduce") != o.ops.end();
    bool others = std::any_of(o.ops.begin(), o.ops.end(),
                              [](const std::string& op) { return op != "all_reduce"; });
    std::vector<std::string> algos;
    for (const std::string& a : o.algos) {
      if (has_ar || (a == "ring" && others)) algos.push_back(a);
    }
    if (others && std::find(algos.begin(), algos.end(), "ring") == algos.end()) {
      algos.push_back("ring");
    }
    for (const std::string& algo : algos) {
      Communicators comms;
      TRAINSIM_RETURN_IF_ERROR(comms.Init(algo, n, members, group, o.timeout_s));
      for (const std::string& op : o.ops) {
        if (op == "all_reduce" &&
            std::find(o.algos.begin(), o.algos.end(), algo) == o.algos.end()) {
          continue;
        }
        if (op != "all_reduce" && algo != "ring") continue;
        const std::string label = op == "send_recv" ? "direct" : algo;
        int64_t last_size = -1;
        for (int64_t bytes : SizeLadder(o)) {
          std::optional<Plan> plan = PlanFor(op, n, bytes);
          if (!plan || plan->size_bytes == last_size) continue;
          last_size = plan->size_bytes;
          const std::string where =
              op + " " + label + " on " + std::to_string(n) + " ranks at " + HumanBytes(bytes);
          for (LocalGpu* g : members) {
            TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(g->device), "cudaSetDevice"));
            // Poison the output so that a call that did nothing cannot pass the check.
            TRAINSIM_RETURN_IF_ERROR(CudaStatus(
                cudaMemsetAsync(g->recv, 0xFF, plan->out_elems * sizeof(float), g->stream),
                "cudaMemsetAsync"));
          }
          const int iters = ItersFor(o, bytes);
          const int warmup = bytes >= (int64_t{256} << 20) ? std::min(o.warmup, 2) : o.warmup;
          for (int w = 0; w < std::max(warmup, 1); ++w) {
            TRAINSIM_RETURN_IF_ERROR(comms.Launch(op, plan->count, n, Clock::now() + timeout));
          }
          std::vector<double> times;
          for (int r = 0; r < o.repeats; ++r) {
            for (LocalGpu* g : members) {
              TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(g->device), "cudaSetDevice"));
              TRAINSIM_RETURN_IF_ERROR(
                  CudaStatus(cudaEventRecord(g->start, g->stream), "cudaEventRecord"));
            }
            auto deadline = Clock::now() + timeout;
            for (int it = 0; it < iters; ++it) {
              TRAINSIM_RETURN_IF_ERROR(comms.Launch(op, plan->count, n, deadline));
            }
            for (LocalGpu* g : members) {
              TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(g->device), "cudaSetDevice"));
              TRAINSIM_RETURN_IF_ERROR(
                  CudaStatus(cudaEventRecord(g->stop, g->stream), "cudaEventRecord"));
            }
            TRAINSIM_RETURN_IF_ERROR(comms.WaitEvents(deadline, where));
            double slowest_ms = 0;
            for (LocalGpu* g : members) {
              float ms = 0;
              TRAINSIM_RETURN_IF_ERROR(
                  CudaStatus(cudaEventElapsedTime(&ms, g->start, g->stop), "cudaEventElapsedTime"));
              slowest_ms = std::max(slowest_ms, static_cast<double>(ms));
            }
            auto world_ms = group.Max(slowest_ms);
            if (!world_ms.ok()) return world_ms.status();
            times.push_back(*world_ms * 1e-3 / iters);
          }
          std::sort(times.begin(), times.end());
          const double t = times.size() % 2
                               ? times[times.size() / 2]
                               : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
          if (!(t > 0)) {
            // A batch shorter than the events' resolution (about 0.5 us): no usable time.
            if (group.is_root()) {
              out << "#  " << where << ": below the CUDA event resolution; raise --iters\n";
            }
            continue;
          }
          CollectiveRow row;
          row.op = op;
          row.algo = label;
          row.nranks = n;
          row.nodes = group.nodes();
          row.size_bytes = plan->size_bytes;
          row.count = plan->count;
          row.time_s = t;
          row.algbw_GBps = static_cast<double>(plan->size_bytes) / t / 1e9;
          row.busbw_GBps = row.algbw_GBps * BusBwFactor(op, n);
          if (o.check) {
            long long bad = 0;
            Status first;
            for (LocalGpu* g : members) {
              Status st = CheckOutput(op, n, *g, plan->count, plan->out_elems, where);
              if (!st.ok()) {
                ++bad;
                if (first.ok()) first = st;
              }
            }
            auto total_bad = group.Sum(bad);
            if (!total_bad.ok()) return total_bad.status();
            if (!first.ok()) return first;
            if (*total_bad > 0) {
              return Status::Internal(where + ": wrong result on " + std::to_string(*total_bad) +
                                      " rank(s) in other processes");
            }
            row.checked = true;
          }
          if (group.is_root()) PrintCollectiveRow(row, out);
          out.flush();
          report->collectives.push_back(row);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace trainsim::comm::nccl
