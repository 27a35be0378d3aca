// step/pipeline.h — internal to step/: the pipeline executors of a simulated step.
//
// Each executor runs its stage's schedule (parallelism/schedule.h) task by task: a task waits
// for its input (the previous stage's activation or the next stage's gradient), lasts its
// chunk's compute (× the stage's slowdown) plus its TP collectives, and then sends its output
// to the neighbouring stage as a flow on the network. With blocking sends (overlap_p2p off)
// the send is posted when the receiver ends its current task, and the sender waits until it
// has drained. Gradient buckets become ready during backward passes (GradientSync).
#ifndef TRAINSIM_STEP_PIPELINE_H_
#define TRAINSIM_STEP_PIPELINE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "comm/collective.h"
#include "comm/schedule.h"
#include "parallelism/schedule.h"
#include "step/gradient_sync.h"
#include "step/pass_costs.h"
#include "step/step_state.h"

namespace trainsim::step {

class Pipeline {
 public:
  Pipeline(StepState* state, std::vector<ChunkCost> costs, GradientSync* sync);
  // Runs the step to its end; FailedPrecondition if a down link stopped it.
  Status Run();

 private:
  struct KernelTime {
    std::string name;
    double fwd_s = 0, bwd_s = 0;
    double fwd_flops = 0, bwd_flops = 0;
    uint32_t recomputed_by = 0;         // parallelism::RecomputeModule bits
    sim::TraceArgs fwd_args, bwd_args;  // the op's roofline (parallelism/roofline.h)
  };
  // The layer collectives that run on the network as flows (pipeline_traffic.cc), in the
  // order a pass meets them: CP's K/V exchange (attention), then EP's token exchange (MoE).
  enum TrafficKind { kCpTraffic = 0, kEpTraffic = 1, kTrafficKinds = 2 };
  // A pass's traffic of one kind: the bytes per rank that run as flows, split into the exposed
  // share (scaled down where the network alone would outlast the closed form's exposed time)
  // and the share overlap hides; and what the closed form's exposed time holds beyond the
  // exposed bytes' own time on the idle network (the latencies of the pass's several
  // collectives): the exposed flows start after it, so that other traffic slows what is
  // bandwidth, not what is latency.
  struct PassTraffic {
    uint64_t exposed = 0, hidden = 0;
    double exposed_s = 0, latency_s = 0;
  };
  // The executors of several simulated replicas can share a group (an EP group spans DP
  // ranks): each pass's exposed exchange starts once, when the last of them reaches it (they
  // run the same schedule, and it holds them, so they meet at every phase in order). The
  // group's first executor (the leader) also starts the hidden traffic, once for all.
  struct Meeting {
    int members = 0;
    std::vector<std::tuple<int, parallelism::Task, int>> waiting;  // (executor, task, j)
  };
  struct Traffic {
    bool on = false;
    bool ring = false;                     // CP's P2P ring: each rank to the next; else all-to-all
    std::vector<PassTraffic> pass;         // index direction · chunks + j (forward 0)
    std::vector<std::vector<int>> groups;  // per executor: its group
    std::vector<Meeting> meetings;
    std::vector<int> meeting_of;  // per executor
    std::vector<bool> leader;     // per executor
  };
  struct Send {  // a pipeline send: from executor src to dst's inbox[idx]
    int src = 0, dst = 0;
    size_t idx = 0;
    double bytes = 0;
    double produced_s = 0;  // when src's task ended
  };

  size_t MsgIndex(bool forward, int chunk, int64_t mb) const;
  void TryStart(int ei);
  bool Held(int ei, const parallelism::Task& t, int j);
  void RunTask(int ei, double gather_s);
  // The trace (pipeline_trace.cc): what it needs computed once; a task's slices, layer by
  // layer for detailed micro-batches; memory in use as activations are stored and freed.
  void InitTrace();
  void TaskSlices(const Executor& e, const parallelism::Task& t, double start, double dur);
  void LayerSlices(const Executor& e, const parallelism::Task& t, int64_t start_ns, int64_t end_ns);
  void KernelSlices(const Executor& e, const parallelism::Task& t, int layer, int64_t start_ns,
                    int64_t end_ns);
  void MemorySample(int ei, double delta_bytes);
  void SettleTask(int ei, parallelism::Task t, int j, double extended);
  // Whether the backward task t makes gradient buckets ready as it runs.
  bool MakesBuckets(const parallelism::Task& t) const;
  void TaskDone(int ei, parallelism::Task t, int j);
  void StartSend(size_t s);
  void Advance(int ei);
  // The exposed part of a pass's EP traffic, after its other work: `bytes` per rank as an
  // all-to-all over the executor's EP group on the network, lasting at least `exposed_s` (the
  // closed form's exposed time); the task settles when both have ended.
  void InitTraffic(TrafficKind kind);
  const PassTraffic& PassOf(TrafficKind kind, const parallelism::Task& t, int j) const;
  // Starts the hidden share of the pass's traffic; returns the seconds of its exposed phases.
  double StartHiddenTraffic(int ei, const parallelism::Task& t, int j);
  // The pass's exposed phases from `kind` on, after its other work; then SettleTask. Each
  // lasts at least the closed form's exposed time, and until its flows have drained.
  void NetPhase(int ei, parallelism::Task t, int j, int kind);
  void PhaseFlows(int ei, parallelism::Task t, int j, int kind);
  void PhasePartDone(int ei, parallelism::Task t, int j, int kind);
  Status StartExchange(TrafficKind kind, int ei, uint64_t bytes, std::function<void()> done);
  // CP's ring exchanges folded into one event while alone on their links (pipeline_traffic.cc,
  // "Folded exchanges"). TryFold: whether executor ei's exchange of `bytes` (the exposed phase
  // of pass (t, j) when `exposed`, after latency_s and lasting at least phase_s; else the
  // pass's hidden share) runs folded, and if so starts it.
  struct RingPlan {
    std::shared_ptr<const comm::PreparedSchedule> prepared;
    std::shared_ptr<const comm::AloneTimeline> alone;  // its run alone; null: not resumable
    bool timed = false;
  };
  RingPlan& RingPlanOf(int ei, uint64_t bytes);
  bool TryFold(int ei, uint64_t bytes, bool exposed, const parallelism::Task& t, int j,
               double latency_s, double phase_s);
  void FoldEnded(int ei);
  void FoldTouched(int ei);

  StepState* st_;
  std::vector<ChunkCost> costs_;
  GradientSync* sync_;
  double send_bytes_ = 0;
  std::vector<std::vector<parallelism::Task>> orders_;
  std::vector<Send> sends_;
  std::vector<size_t> free_sends_;
  std::vector<KernelTime> layer_ops_;             // one dense layer's kernels, for the trace
  std::vector<KernelTime> moe_ops_;               // one MoE layer's kernels
  std::vector<parallelism::ChunkLayers> ranges_;  // each virtual stage's layers
  struct LayerCollective {  // one collective of a layer (algorithm and time: comm's estimate)
    std::string name;
    comm::Op op = comm::Op::kAllReduce;
    double bytes = 0;
    int count = 1, ranks = 1, track = 0;
    bool forward = true;
    bool recomputed = false;  // a forward collective selective recomputation re-runs
    std::string algorithm, protocol;
    double estimate_s = 0;
  };
  std::vector<LayerCollective> layer_colls_, moe_colls_;
  std::vector<double> chunk_act_bytes_;  // per virtual stage: one micro-batch's activations
  std::vector<double> memory_bytes_;     // per executor: memory in use now
  Traffic traffic_[kTrafficKinds];
  comm::CollectivePlanCache traffic_plans_;
  // CP rings' exchanges prepared to run, per (the group's first GPU, bytes per rank).
  std::map<std::pair<int, uint64_t>, RingPlan> ring_plans_;
  struct Fold {  // per executor: its CP group's links and the exchange folded on them
    comm::FlowNetwork::LinkSetId set = -2;  // -2: not followed yet; -1: none to be had
    bool active = false, exposed = false;
    int64_t start_ns = 0, latency_ns = 0, phase_ns = 0, end_ns = 0;
    const RingPlan* plan = nullptr;
    sim::EventId end = 0;
    comm::FlowNetwork::WatchId watch = 0;
    parallelism::Task t;
    int j = 0;
  };
  std::vector<Fold> folds_;
  int fold_sets_ = 0;  // link sets the folds follow
};

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_PIPELINE_H_
