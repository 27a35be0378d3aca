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
#include <map>
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

// Records trace slices when enabled; a slice of zero length is dropped.
class TraceRecorder {
 public:
  explicit TraceRecorder(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  void Slice(int gpu, int track, std::string name, const char* category, double start_s,
             double duration_s, std::string args = {}) {
    if (!enabled_ || duration_s <= 0) return;
    slices_.push_back(
        {gpu, track, std::move(name), category, start_s, duration_s, std::move(args)});
  }
  std::vector<TraceSlice>& slices() { return slices_; }

 private:
  bool enabled_;
  std::vector<TraceSlice> slices_;
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
  StepBreakdown b;
  double compute_done_s = -1, reduced_s = -1, opt_end_s = 0, end_s = 0;
  bool finished = false;
};

struct StepState {
  StepState(const StepConfig& config, const comm::Topology* topology,
            const parallelism::Layout* layout, std::vector<int> replicas,
            const std::map<int, double>& slowdown, bool record_trace);

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
};

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_STEP_STATE_H_
