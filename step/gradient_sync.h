// step/gradient_sync.h — internal to step/: the data-parallel side of a simulated step.
//
// One DP communicator per stage (TP rank 0's, shared by the simulated replicas) reduces the
// gradient buckets one after another as every replica has produced them; a stage is reduced
// when its backwards are done and its last bucket has drained. With ZeRO-2/3 every backward
// reduces its own buckets and ends only once they are (DrainsEachBackward). Then, with PP > 1,
// the tied embedding's gradient all-reduce between the first and last stage; the gradient-norm
// barrier across stages; each stage's optimizer; with ZeRO-1/2 the all-gather of updated
// weights.
// ZeRO-3 gathers a chunk's weights before each of its passes. Every collective runs as flows,
// unless StepConfig::flow_collective_max_nodes (no line by default) is set below the nodes its
// group spans: then it is one closed-form event on the network's current capacities
// (docs/step-simulation.md says what that loses).
// Every collective that runs while the stage computes takes the SMs of its NCCL channels from
// it (StepState::AddCommShare).
//
// Trains: a stage's communicator is often many buckets behind (ZeRO-2 reduces every
// micro-batch's gradients: a million reduce-scatters a step on GPT-3 175B with PP 4). While no
// other flow crosses the links of a bucket's collective, each bucket takes the same time T, that
// of its run alone (comm::TimePlanAlone), so k queued buckets end k·T after the first starts
// and run as one event. A watch on those links (FlowNetwork::Watch) stops the train the instant
// anything else is to cross them: the buckets done by then are accounted, the running one goes
// on as flows from where its run alone is (comm::ResumePlan), and the rest queue as before.
// Exact up to the network's nanosecond rounding; used when a bucket is one collective (no
// hybrid-sharding or expert part) whose transfer classes do not split when it runs alone, by
// the stages that get one of the network's 64 link sets (FlowNetwork::kMaxLinkSets; CP's folded
// exchanges take up to 32, pipeline_traffic.cc); the others run their buckets as flows. A
// stage's T is timed once: link factors are set before the step starts and never change in it.
#ifndef TRAINSIM_STEP_GRADIENT_SYNC_H_
#define TRAINSIM_STEP_GRADIENT_SYNC_H_

#include <array>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "comm/collective.h"
#include "step/pass_costs.h"
#include "step/step_state.h"

namespace trainsim::step {

// A backward pass's gradient buckets become ready evenly through it: of `count` buckets in a
// pass of `pass_s` seconds from `start_ns`, bucket i (from 1) at start + pass · i / (count + 1),
// rounded as an event scheduled at the pass's start would run.
struct BucketPass {
  int64_t start_ns = 0;
  double pass_s = 0;
  int count = 0;
};
int64_t BucketReadyNs(const BucketPass& p, int i);
// How many of the pass's buckets are ready by `now`: the last i in [from, count] with
// BucketReadyNs(p, i) <= now (from when none past it is). O(1): a guess corrected to the exact
// count, for a train that settles thousands at one look. REQUIRES: 0 <= from <= count.
int BucketsReadyBy(const BucketPass& p, int from, int64_t now);

class GradientSync {
 public:
  explicit GradientSync(StepState* state);

  int buckets_per_chunk(int stage) const { return channels_[size_t(stage)].plan.per_chunk; }
  // Whether backward passes produce gradient buckets to reduce (some stage's group has > 1
  // rank: a stage of dense layers alone has no expert gradients to reduce over expert-DP).
  bool reduces() const { return reduces_; }
  // Replica `replica` of `stage` has produced its next gradient bucket.
  void BucketReady(int stage, int replica);
  // Replica `replica` of `stage` starts a backward pass of `pass_s` seconds that produces
  // `count` buckets before its end, the i-th (from 1) i/(count + 1) of the way through (its
  // last bucket: BucketReady at its end). They count as produced from those instants, without
  // an event each (a million a step with ZeRO-2): Pump settles them when it looks, and
  // schedules one wake-up when the communicator is idle waiting for one.
  void BucketsDuring(int stage, int replica, double pass_s, int count);
  // Whether each backward pass that reduces its buckets ends only once they are reduced: ZeRO-2
  // and 3, which reduce every micro-batch's gradients into their shards. DeepSpeed's stage 1/2
  // ends each backward by synchronizing its reduction stream (stage_1_and_2.py,
  // independent_gradient_partition_epilogue), and FSDP2's post-backward callback makes the
  // compute stream wait for the last reduce-scatter; either way a micro-batch's reductions
  // drain before its stage computes on, and at most one backward's gradients wait unreduced.
  // Without overlap_dp the chunk's one bucket is ready at the pass's end, and the backward
  // waits for its whole reduction (DeepSpeed with overlap_comm off).
  bool DrainsEachBackward() const { return reduces() && st_->c.zero_stage >= 2; }
  // Runs `then` once every bucket replica `replica` of `stage` has produced is reduced: now if
  // they are, else when the last of them is. At most one waits per replica.
  void AfterReduced(int stage, int replica, std::function<void()> then);
  // ZeRO-3 with DP × CP > 1: every pass first gathers its chunk's weights (BeforePass).
  bool GathersBeforePass() const { return st_->c.zero_stage >= 3 && st_->c.dp * st_->c.cp > 1; }
  // FSDP's per-layer all-gathers of executor ei's chunk for a pass of `pass_s` seconds: the
  // first layer's gather is waited for, the others are prefetched under the pass; `then` gets
  // the time by which the remaining gathers outlast the pass. REQUIRES: GathersBeforePass().
  void BeforePass(int ei, double pass_s, std::function<void(double)> then);
  // Executor ei ran its last task.
  void ComputeDone(int ei);

  int closed_form_collectives() const { return closed_form_collectives_; }
  int closed_form_max_nodes() const { return closed_form_max_nodes_; }

 private:
  struct Channel {
    std::vector<int> group;          // dense gradients: DP × CP (or the shard group)
    std::vector<int> expert_group;   // expert gradients: expert-DP
    std::vector<int> replica_group;  // hybrid sharding: the same shard in the other groups
    GradientBuckets plan;
    std::vector<size_t> produced;  // per simulated replica: buckets it has made ready
    // Per simulated replica, the pass producing buckets (BucketsDuring): its start, length and
    // buckets, of which `settled` are counted in `produced`.
    struct Producing {
      BucketPass pass;
      int settled = 0;
      int64_t next_ns = std::numeric_limits<int64_t>::max();  // when bucket settled + 1 is
    };
    std::vector<Producing> producing;
    // Per simulated replica, a backward's end waiting for its buckets (AfterReduced).
    std::vector<std::function<void()>> drains;
    sim::EventId wake = 0;  // Pump when the bucket waited for is produced
    int64_t wake_ns = -1;
    size_t next = 0;
    bool running = false;
    size_t done = 0;
    int optimizer_done = 0;
    double share = 0;  // SM share of the bucket collective in flight
    // RunBucket's parts, the same collective for every bucket of the stage: set up by the first.
    struct Part {
      bool set = false;
      comm::CollectiveSpec spec;                              // no GPUs: nothing to move
      const comm::CollectivePlanCache::Plan* plan = nullptr;  // null: StartCollective each time
      bool has_share = false;
      double share = 0;
    };
    std::array<Part, 3> parts;
    double gather_share = 0;  // of the ZeRO weight all-gather
    // Trains (above): the bucket's one collective, its run alone and its links; `watch` is set
    // while those links have had nothing else on them since it was; `active` while k buckets
    // from start_ns run as one event (end_event).
    struct Train {
      bool checked = false;
      int part = -1;  // -1: the stage's buckets cannot run as trains
      std::shared_ptr<const comm::AloneTimeline> timeline;
      comm::FlowNetwork::LinkSetId set = -1;  // the collective's links, followed
      comm::FlowNetwork::WatchId watch = 0;
      bool active = false;
      int64_t start_ns = 0;
      int64_t k = 0;
      sim::EventId end_event = 0;
    };
    Train train;
  };

  // Nodes `gpus` span, counted once per group.
  int SpanOf(const std::vector<int>& gpus);
  Result<comm::CollectiveEstimate> StartCollective(const comm::CollectiveSpec& spec,
                                                   std::function<void()> on_done);
  // Whether StartCollective runs `spec` as flows (its group spans at most
  // flow_collective_max_nodes nodes, or there is no line).
  bool OnFlows(const comm::CollectiveSpec& spec);
  void Pump(int stage);
  static int64_t NextBucketNs(const Channel::Producing& p);
  // Counts the buckets produced by now (BucketsDuring); the least over the replicas.
  size_t SettleProduced(int stage);
  // The instant bucket `next` + 1 is produced by every replica, if their passes in progress
  // produce it; -1 if some replica has yet to start the pass that does.
  int64_t ProducedAt(int stage, size_t need) const;
  // Sets up the bucket's collective `part` (its spec, plan and nothing else); false on error.
  bool SetUpPart(int stage, int part);
  // Starts the queued buckets as a train when they can run as one; false if they cannot now.
  bool StartTrain(int stage);
  void TrainEnded(int stage);
  void TrainTouched(int stage);
  // Accounts `n` buckets of the train as reduced: the first from its start, each T long.
  void TrainBucketsDone(int stage, int64_t n);
  // Runs the bucket's collectives (dense, replica all-reduce, expert) one after another.
  void RunBucket(int stage, int part, double start);
  void GatherWeights(int stage, double now);
  void MaybeReduced(int stage);
  // Runs the drains (AfterReduced) whose buckets are now all reduced.
  void ReleaseDrains(int stage);
  void ReduceTiedEmbedding();
  void Barrier();
  void OptimizerDone(int ei);
  void Finish(int ei, double end, double slowed = 0);
  // The SM share the collective `spec`, run as `how`, takes (step/comm_sm_share.h); adds it to
  // every executor of `stage` (the GPUs of its group that are simulated).
  double ShareOf(const comm::CollectiveSpec& spec, const comm::CollectiveEstimate& how);
  void AddStageShare(int stage, double share);

  StepState* st_;
  std::vector<Channel> channels_;
  bool reduces_ = false;
  size_t reduced_count_ = 0;
  size_t pending_embedding_ = 0;
  std::map<std::tuple<std::vector<int>, int, uint64_t>, comm::CollectiveEstimate>
      closed_form_cache_;
  std::map<std::vector<int>, int> span_of_;  // nodes a collective group spans (SpanOf)
  std::vector<double> fsdp_share_;           // per executor: its FSDP gather's SM share
  comm::CollectivePlanCache plans_;          // every bucket of a stage repeats its collectives
  // The idle network on which bucket collectives are timed alone (Trains), built once.
  int closed_form_collectives_ = 0;
  int closed_form_max_nodes_ = 0;
};

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_GRADIENT_SYNC_H_
