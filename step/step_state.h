// step/step_state.h — internal to step/: what the pipeline executors and the gradient
// synchronisation of one simulated step share (the engine, the flow network, one executor per
// simulated replica × stage, the trace being recorded, the first error).
//
// An executor stands for one pipeline stage of one simulated replica: its TP ranks run as one,
// at the slowest rank's speed; its flows start at TP rank 0's GPU. Its breakdown accumulates
// the accounting categories of step_simulation.h, which add up to the step time exactly.
#ifndef TRAINSIM_STEP_STEP_STATE_H_
#define TRAINSIM_STEP_STEP_STATE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/flow_network.h"
#include "comm/topology.h"
#include "parallelism/layout.h"
#include "sim/engine.h"
#include "sim/status.h"
#include "step/step_simulation.h"

namespace trainsim::step {

// One printf conversion of `v` ("%.3g", "%g"), for the step simulation's messages.
std::string FormatNumber(const char* format, double v);

// Records the trace when enabled. Times in seconds are converted to integer nanoseconds by
// rounding each end (monotonic, so slices disjoint or nested in seconds stay so); a slice of
// zero length is dropped.
class TraceRecorder {
 public:
  TraceRecorder(bool enabled, int64_t detail_microbatches)
      : enabled_(enabled), detail_(detail_microbatches) {}
  bool enabled() const { return enabled_; }
  // Whether micro-batch `mb`'s passes are drawn layer by layer.
  bool Detailed(int64_t mb) const { return enabled_ && (detail_ < 0 || mb < detail_); }
  static int64_t Ns(double s) { return std::llround(s * 1e9); }
  // Each returns the slice's index in slices(), or -1 when it was not recorded.
  int64_t Slice(int gpu, int track, std::string name, const char* category, double start_s,
                double duration_s, sim::TraceArgs args = {}) {
    if (!enabled_ || duration_s <= 0) return -1;
    const int64_t a = Ns(start_s), b = Ns(start_s + duration_s);
    return SliceNs(gpu, track, std::move(name), category, a, b - a, std::move(args));
  }
  int64_t SliceNs(int gpu, int track, std::string name, const char* category, int64_t start_ns,
                  int64_t duration_ns, sim::TraceArgs args = {}) {
    if (!enabled_ || duration_ns <= 0) return -1;
    slices_.push_back(
        {gpu, track, std::move(name), category, start_ns, duration_ns, std::move(args)});
    return int64_t(slices_.size()) - 1;
  }
  // An arrow between two recorded slices (ignored when either was not recorded).
  void Flow(int64_t from_slice, int64_t to_slice) {
    if (!enabled_ || from_slice < 0 || to_slice < 0) return;
    extra_.flows.push_back({extra_.flows.size() + 1, size_t(from_slice), size_t(to_slice)});
  }
  void Counter(int gpu, const char* name, int64_t at_ns, double value) {
    if (!enabled_) return;
    extra_.counters.push_back({gpu, name, at_ns, value});
  }
  // A transfer over `path` at `rate_Bps` (its average) during [start_ns, end_ns): the link
  // utilisation counters (LinkCounters) add these up.
  struct Transfer {
    std::vector<comm::LinkId> path;
    int64_t start_ns = 0, end_ns = 0;
    double rate_Bps = 0;
  };
  void LinkTransfer(std::vector<comm::LinkId> path, int64_t start_ns, int64_t end_ns,
                    double bytes) {
    if (!enabled_ || end_ns <= start_ns) return;
    transfers_.push_back(
        {std::move(path), start_ns, end_ns, bytes / (double(end_ns - start_ns) * 1e-9)});
  }
  // Appends one utilisation counter per link the transfers used: the sum of the average rates
  // of the transfers on it over its capacity, sampled at every change; and the links' names.
  void LinkCounters(const comm::Topology& topo, const std::vector<double>& capacity_Bps);
  std::vector<TraceSlice>& slices() { return slices_; }
  StepTrace& extra() { return extra_; }

 private:
  bool enabled_;
  int64_t detail_;
  std::vector<TraceSlice> slices_;
  StepTrace extra_;
  std::vector<Transfer> transfers_;
};

struct Executor {
  int replica = 0, stage = 0, gpu = 0;  // index into the simulated replicas; TP rank 0's GPU
  double slow = 1;                      // the slowest TP rank's slowdown
  size_t next = 0;                      // next task of the stage's schedule
  bool busy = false;                    // computing, or blocked on its own send
  bool computing = false;               // inside a task (kernels, TP collectives, ZeRO-3 gather)
  std::vector<size_t> pending_in;       // blocking sends to it waiting for its task to end
  double wait_since = -1;
  // Waiting for the host's framework time or the loader's micro-batch (Pipeline::Held): held
  // until the scheduled wake-up, which sets released.
  bool held = false, released = false;
  struct Msg {
    bool arrived = false;
    double produced_s = 0;  // when the producer finished computing it (the send started)
  };
  std::vector<Msg> inbox;  // [direction][chunk][micro-batch]
  // Compute slowed by overlapped collectives (StepState::Accrue): the SM share the
  // collectives in flight on this GPU take, the share of its time the running task computes
  // (0 when idle), the work the compute has lost since accrued_at, and, while a task is
  // extended to make up lost work, the work still owed.
  double comm_share = 0;
  double compute_rate = 0;
  double lost_s = 0, accrued_at = 0, owed_s = 0;
  // A pass's exposed CP or EP phase (Pipeline::NetPhase): its parts still running (the flows
  // and the closed form's time), when it began and the closed form's time.
  int net_pending = 0;
  double net_phase_start = 0, net_phase_s = 0;
  StepBreakdown b;
  double compute_done_s = -1, reduced_s = -1, opt_end_s = 0, end_s = 0;
  bool finished = false;
};

struct StepState {
  StepState(const StepConfig& config, const comm::Topology* topology,
            const parallelism::Layout* layout, std::vector<int> replicas,
            const std::map<int, double>& slowdown, const SimulateOptions& options);

  const StepConfig& cfg;
  const parallelism::ParallelConfig& c;
  const comm::Topology* topo;
  const parallelism::Layout* layout;
  sim::Engine engine;
  comm::FlowNetwork net;
  std::vector<int> replicas;  // DP indices of the simulated replicas
  int v = 1;                  // chunks per rank
  int64_t m = 1;              // micro-batches
  int nic_share = 1;
  std::vector<Executor> execs;  // index replica · pp + stage
  // Per stage: one micro-batch's forward over all its chunks (what the next step's forward
  // offers to hide an overlapped parameter all-gather under).
  std::vector<double> forward_s;
  // The data loader's seconds per micro-batch of the busiest node (step/input_pipeline.h; 0
  // when it never binds).
  double loader_s_per_micro_batch = 0;
  int64_t loader_queued = 0;
  int loader_replicas = 0;  // replicas the busiest node's loader feeds  // micro-batches its
                            // prefetch queue holds at the step's start
  TraceRecorder trace;
  Status error;

  double now() const { return engine.now().seconds(); }
  int64_t now_ns() const { return engine.now().nanos(); }
  // Adds to e.lost_s the compute work lost since e.accrued_at: ∫ share · rate dt (both are
  // constant between calls, which every change of either makes first).
  void Accrue(Executor& e);
  // A collective taking `share` of executor ei's SMs starts (+share) or ends (−share).
  void AddCommShare(int ei, double share);
  void SetComputeRate(Executor& e, double rate);
  // The most of a GPU's SMs collectives can hold: all but one (comm_sm_share.h SmShare).
  double max_comm_share() const { return cfg.gpu.num_sms > 1 ? 1.0 - 1.0 / cfg.gpu.num_sms : 0.0; }
  Executor& exec(int i) { return execs[size_t(i)]; }
  double step_end() const;
  // The breakdown of one executor, with the time after it finished until the step ended as
  // `other`.
  StepBreakdown Breakdown(int replica, int stage) const;

  // A task longer than ~3 years of simulated time means absurd input (e.g. a slowdown of
  // 1e12); it is refused rather than overflow sim::Time.
  static constexpr double kMaxDurationS = 1e8;
  static sim::Time Delay(double s) { return sim::Time::FromSeconds(std::min(s, kMaxDurationS)); }
  static Status TooLong(double s);

  // An idle network over the same topology, on its own engine: the scratch on which the
  // gradient trains and CP's folded exchanges time their runs alone (comm::TimeAlone leaves it
  // idle, every link at full bandwidth). Built on first use: building one costs O(links).
  comm::FlowNetwork* scratch_net();

 private:
  std::unique_ptr<sim::Engine> scratch_engine_;
  std::unique_ptr<comm::FlowNetwork> scratch_net_;
};

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_STEP_STATE_H_
