#include "step/gradient_sync.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "comm/schedule.h"
#include "step/comm_sm_share.h"

namespace trainsim::step {

GradientSync::GradientSync(StepState* state) : st_(state) {
  const int pp = st_->c.pp;
  channels_.resize(size_t(pp));
  for (int s = 0; s < pp; ++s) {
    Channel& ch = channels_[size_t(s)];
    const int gpu = st_->layout->GpuOf({0, s, 0});
    ch.group = DenseShardGroup(*st_->layout, gpu);
    ch.replica_group = ShardReplicaGroup(*st_->layout, gpu);
    ch.expert_group = st_->layout->ExpertDpGroup(gpu);
    ch.plan = PlanGradientBuckets(st_->cfg, s, st_->nic_share);
    ch.produced.assign(st_->replicas.size(), 0);
    ch.producing.assign(st_->replicas.size(), {});
    ch.drains.resize(st_->replicas.size());
    reduces_ = reduces_ || ch.plan.count > 0;
  }
  fsdp_share_.assign(st_->execs.size(), 0.0);
}

double GradientSync::ShareOf(const comm::CollectiveSpec& spec,
                             const comm::CollectiveEstimate& how) {
  return CollectiveSmShare(st_->cfg, spec.op, how.algo, how.protocol, int(spec.gpus.size()),
                           SpanOf(spec.gpus), double(spec.bytes));
}

int GradientSync::SpanOf(const std::vector<int>& gpus) {
  auto [it, fresh] = span_of_.emplace(gpus, 0);
  if (fresh) it->second = st_->topo->NodesSpanned(gpus);
  return it->second;
}

void GradientSync::AddStageShare(int stage, double share) {
  for (size_t r = 0; r < st_->replicas.size(); ++r) {
    st_->AddCommShare(int(r) * st_->c.pp + stage, share);
  }
}

// As flows on the network, or, when the group spans more than flow_collective_max_nodes
// nodes, as one event after comm's closed form on the network's current capacities (cached per
// group, op and size: capacities do not change during a step). on_done never runs if a link on
// its path is down, as with flows.
bool GradientSync::OnFlows(const comm::CollectiveSpec& spec) {
  const int max_nodes = st_->cfg.flow_collective_max_nodes;
  // A group of at most that many GPUs cannot span more nodes; otherwise count its nodes once
  // per group (every bucket of a stage reduces over the same group).
  return spec.gpus.size() <= size_t(std::max(max_nodes, 0)) || SpanOf(spec.gpus) <= max_nodes;
}

Result<comm::CollectiveEstimate> GradientSync::StartCollective(const comm::CollectiveSpec& spec,
                                                               std::function<void()> on_done) {
  if (OnFlows(spec)) return comm::RunCollective(&st_->net, spec, on_done, &plans_);
  const int span = SpanOf(spec.gpus);
  auto key = std::make_tuple(spec.gpus, int(spec.op), spec.bytes);
  auto it = closed_form_cache_.find(key);
  if (it == closed_form_cache_.end()) {
    Result<comm::CollectiveEstimate> est = comm::EstimateCollectiveOnNetwork(st_->net, spec);
    if (!est.ok()) return est.status();
    it = closed_form_cache_.emplace(std::move(key), *est).first;
  }
  closed_form_collectives_++;
  closed_form_max_nodes_ = std::max(closed_form_max_nodes_, span);
  if (!it->second.time.is_max()) st_->engine.Schedule(it->second.time, std::move(on_done));
  return it->second;
}

void GradientSync::BeforePass(int ei, double pass_s, std::function<void(double)> then) {
  // FSDP / ZeRO-3 (PyTorch FSDP's forward and backward prefetch, Megatron-FSDP): the chunk's
  // layers are all-gathered one unit at a time, the next unit's gather issued while the current
  // one computes. The pass waits for the first layer's gather (as flows); the rest, timed by
  // comm's closed form on the network's current capacities, run under the pass and delay its
  // end only by what exceeds it.
  Executor& e = st_->exec(ei);
  const double now = st_->now();
  const Zero3Gather bytes = Zero3PassGather(st_->cfg, e.stage, st_->nic_share);
  const Channel& ch = channels_[size_t(e.stage)];
  const int layers =
      std::max(1, int(std::lround(double(st_->cfg.model.num_layers) / (st_->c.pp * st_->v))));
  comm::CollectiveSpec first{comm::Op::kAllGather, comm::Algo::kAuto, ch.group,
                             uint64_t(bytes.dense / layers)};
  // The other layers' dense shards and every layer's expert shards (over expert-DP), one after
  // another on the same NICs.
  double rest_s = 0;
  const std::pair<const std::vector<int>*, double> rest[] = {
      {&ch.group, layers > 1 ? bytes.dense - bytes.dense / layers : 0.0},
      {&ch.expert_group, bytes.expert}};
  for (const auto& [group, b] : rest) {
    if (group->size() <= 1 || b <= 0) continue;
    Result<comm::CollectiveEstimate> t = comm::EstimateCollectiveOnNetwork(
        st_->net, {comm::Op::kAllGather, comm::Algo::kAuto, *group, uint64_t(b)});
    if (!t.ok()) {
      st_->error = t.status();
      return;
    }
    rest_s += t->time.seconds();
  }
  const double extra = std::max(0.0, rest_s - pass_s);
  Result<comm::CollectiveEstimate> r =
      StartCollective(first, [this, ei, now, extra, rest_s, bytes = first.bytes,
                              ranks = first.gpus.size(), then = std::move(then)] {
        Executor& x = st_->exec(ei);
        const double t_now = st_->now();
        // The prefetched gathers run beside the pass for rest_s, on the first one's channels.
        const double share = fsdp_share_[size_t(ei)];
        if (rest_s <= 0) st_->AddCommShare(ei, -share);
        if (rest_s > 0) {
          st_->engine.Schedule(StepState::Delay(rest_s),
                               [this, ei, share] { st_->AddCommShare(ei, -share); });
        }
        x.b.exposed_dp_comm_s += t_now - now + extra;
        st_->trace.Slice(x.gpu, kTrackDp, "fsdp all_gather", "dp", now, t_now - now,
                         {{"bytes", int64_t(bytes)}, {"ranks", int64_t(ranks)}});
        then(extra);
      });
  if (!r.ok()) {
    st_->error = r.status();
    return;
  }
  fsdp_share_[size_t(ei)] = ShareOf(first, *r);
  st_->AddCommShare(ei, fsdp_share_[size_t(ei)]);
}

void GradientSync::ComputeDone(int ei) {
  Executor& e = st_->exec(ei);
  e.compute_done_s = st_->now();
  if (reduces() && !st_->c.overlap_dp && !DrainsEachBackward()) {
    for (int64_t i = 0; i < channels_[size_t(e.stage)].plan.count; ++i) {
      BucketReady(e.stage, e.replica);
    }
  }
  MaybeReduced(e.stage);
}

// Buckets become ready in the same order in every replica; a bucket's reduction can start once
// every replica has produced it.
void GradientSync::BucketReady(int stage, int replica) {
  channels_[size_t(stage)].produced[size_t(replica)]++;
  Pump(stage);
}

void GradientSync::BucketsDuring(int stage, int replica, double pass_s, int count) {
  Channel& ch = channels_[size_t(stage)];
  Channel::Producing& p = ch.producing[size_t(replica)];
  // The previous pass's buckets were all produced before it ended.
  ch.produced[size_t(replica)] += size_t(p.pass.count - p.settled);
  p = {{st_->now_ns(), pass_s, count}, 0, 0};
  p.next_ns = NextBucketNs(p);
  Pump(stage);
}

void GradientSync::AfterReduced(int stage, int replica, std::function<void()> then) {
  Channel& ch = channels_[size_t(stage)];
  // The pass has ended: all its buckets are produced, whether or not Pump has counted them.
  Channel::Producing& p = ch.producing[size_t(replica)];
  const bool folded = p.pass.count > p.settled;
  ch.produced[size_t(replica)] += size_t(p.pass.count - p.settled);
  p.settled = p.pass.count;
  p.next_ns = std::numeric_limits<int64_t>::max();
  // (A stage with nothing to reduce counts the buckets it makes but runs none.)
  if (ch.plan.count == 0 || ch.done >= ch.produced[size_t(replica)]) {
    then();
    return;
  }
  ch.drains[size_t(replica)] = std::move(then);
  // Buckets just counted may let an idle channel start now rather than at its next wake.
  if (folded) Pump(stage);
}

// A replica's drain waits for buckets it has produced, so for no bucket beyond the least any
// replica has produced: a train (k buckets produced by all at its start) never ends past it,
// and trains settle their buckets no later than the drain's.
void GradientSync::ReleaseDrains(int stage) {
  Channel& ch = channels_[size_t(stage)];
  for (size_t r = 0; r < ch.drains.size(); ++r) {
    if (!ch.drains[r] || ch.done < ch.produced[r]) continue;
    std::function<void()> then = std::move(ch.drains[r]);
    ch.drains[r] = nullptr;
    then();
  }
}

// Bucket i (from 1) of a pass is produced at start + Delay(pass · i / (count + 1)), when an
// event scheduled at the pass's start would run.
int64_t GradientSync::NextBucketNs(const Channel::Producing& p) {
  if (p.settled >= p.pass.count) return std::numeric_limits<int64_t>::max();
  return BucketReadyNs(p.pass, p.settled + 1);
}

int64_t BucketReadyNs(const BucketPass& p, int i) {
  return p.start_ns + StepState::Delay(p.pass_s * i / (p.count + 1)).nanos();
}

int BucketsReadyBy(const BucketPass& p, int from, int64_t now) {
  // BucketReadyNs does not decrease with i; the guess is off by at most a rounding.
  int i = p.count;
  if (p.pass_s > 0) {
    const double guess = double(now - p.start_ns) * 1e-9 / p.pass_s * (p.count + 1);
    if (guess < double(p.count)) i = std::max(from, int(guess));
  }
  while (i < p.count && BucketReadyNs(p, i + 1) <= now) ++i;
  while (i > from && BucketReadyNs(p, i) > now) --i;
  return i;
}

size_t GradientSync::SettleProduced(int stage) {
  Channel& ch = channels_[size_t(stage)];
  const int64_t now = st_->now_ns();
  size_t least = std::numeric_limits<size_t>::max();
  for (size_t r = 0; r < ch.producing.size(); ++r) {
    Channel::Producing& p = ch.producing[r];
    if (p.next_ns <= now) {
      const int settled = BucketsReadyBy(p.pass, p.settled, now);
      ch.produced[r] += size_t(settled - p.settled);
      p.settled = settled;
      p.next_ns = NextBucketNs(p);
    }
    least = std::min(least, ch.produced[r]);
  }
  return least;
}

int64_t GradientSync::ProducedAt(int stage, size_t need) const {
  const Channel& ch = channels_[size_t(stage)];
  int64_t at = 0;
  for (size_t r = 0; r < ch.producing.size(); ++r) {
    if (ch.produced[r] >= need) continue;
    const Channel::Producing& p = ch.producing[r];
    const size_t i = size_t(p.settled) + (need - ch.produced[r]);  // from 1
    if (i > size_t(p.pass.count)) return -1;
    at = std::max(at, BucketReadyNs(p.pass, int(i)));
  }
  return at;
}

void GradientSync::Pump(int stage) {
  Channel& ch = channels_[size_t(stage)];
  if (ch.running || ch.next >= size_t(ch.plan.count)) return;
  if (SettleProduced(stage) <= ch.next) {
    // Idle: wake when every replica has produced bucket `next` (if passes in progress do).
    const int64_t at = ProducedAt(stage, ch.next + 1);
    if (at != ch.wake_ns) {
      if (ch.wake != 0) st_->engine.Cancel(ch.wake);
      ch.wake = 0;
      ch.wake_ns = at;
      if (at >= 0) {
        ch.wake = st_->engine.ScheduleAt(sim::Time::Nanos(at), [this, stage] {
          Channel& c = channels_[size_t(stage)];
          c.wake = 0;
          c.wake_ns = -1;
          Pump(stage);
        });
      }
    }
    return;
  }
  ch.running = true;
  if (StartTrain(stage)) return;
  RunBucket(stage, 0, st_->now());
}

bool GradientSync::StartTrain(int stage) {
  Channel& ch = channels_[size_t(stage)];
  Channel::Train& t = ch.train;
  if (!st_->cfg.bucket_trains) return false;
  if (!t.checked) {
    t.checked = true;
    int parts = 0;
    for (int part = 0; part < 3; ++part) {
      if (!SetUpPart(stage, part)) return false;
      if (ch.parts[size_t(part)].spec.gpus.empty()) continue;
      ++parts;
      t.part = part;
    }
    const Channel::Part* p = t.part >= 0 ? &ch.parts[size_t(t.part)] : nullptr;
    if (parts != 1 || p->plan == nullptr) {
      t.part = -1;
      return false;
    }
    std::optional<comm::AloneTimeline> timeline =
        comm::TimePlanAlone(st_->net, *p->plan, st_->scratch_net());
    if (!timeline.has_value() || timeline->total_ns <= 0) {
      t.part = -1;
      return false;
    }
    t.set = st_->net.FollowLinks(comm::PlanLinks(*p->plan));
    if (t.set < 0) {  // the network follows no more link sets
      t.part = -1;
      return false;
    }
    t.timeline = std::make_shared<const comm::AloneTimeline>(std::move(*timeline));
  }
  if (t.part < 0) return false;
  if (t.watch == 0) {
    if (!st_->net.LinksFree(t.set)) return false;
    t.watch = st_->net.Watch(t.set, [this, stage] { TrainTouched(stage); });
  }
  Channel::Part& p = ch.parts[size_t(t.part)];
  if (!p.has_share) {
    p.has_share = true;
    p.share = ShareOf(p.spec, comm::PlanEstimate(*p.plan));
  }
  t.active = true;
  t.start_ns = st_->now_ns();
  t.k = int64_t(SettleProduced(stage) - ch.next);
  ch.share = p.share;
  AddStageShare(stage, ch.share);
  t.end_event = st_->engine.Schedule(sim::Time::Nanos(t.k * t.timeline->total_ns),
                                     [this, stage] { TrainEnded(stage); });
  return true;
}

void GradientSync::TrainBucketsDone(int stage, int64_t n) {
  Channel& ch = channels_[size_t(stage)];
  Channel::Train& t = ch.train;
  const int64_t period = t.timeline->total_ns;
  for (int64_t i = 0; i < n; ++i) {
    ch.next++;
    ch.done++;
    if (st_->trace.enabled()) {
      const double start = double(t.start_ns + i * period) * 1e-9;
      st_->trace.Slice(ch.group[0], kTrackDp, "dp grad reduce", "dp", start, double(period) * 1e-9,
                       {{"op", std::string(comm::OpName(ch.plan.op))},
                        {"bucket", int64_t(ch.next)},
                        {"bytes", int64_t(ch.plan.bytes)},
                        {"expert_bytes", int64_t(ch.plan.expert_bytes)},
                        {"ranks", int64_t(ch.group.size())}});
    }
  }
  t.start_ns += n * period;
  t.k -= n;
}

// The train's last bucket is done: as RunBucket's end for each of them, then the next ones.
void GradientSync::TrainEnded(int stage) {
  Channel& ch = channels_[size_t(stage)];
  Channel::Train& t = ch.train;
  t.end_event = 0;
  TrainBucketsDone(stage, t.k);
  t.active = false;
  AddStageShare(stage, -ch.share);
  ch.running = false;
  if (ch.done == size_t(ch.plan.count)) {
    // The stage's last bucket: its links are for the collectives that follow.
    st_->net.Unwatch(t.watch);
    t.watch = 0;
    MaybeReduced(stage);
  }
  ReleaseDrains(stage);
  Pump(stage);
}

// Something else is to cross the train's links now (the watch has ended): the buckets done by
// now are, the running one continues as flows from where its run alone is, the rest queue.
void GradientSync::TrainTouched(int stage) {
  Channel& ch = channels_[size_t(stage)];
  Channel::Train& t = ch.train;
  t.watch = 0;
  if (!t.active) return;
  const int64_t period = t.timeline->total_ns;
  const int64_t elapsed = st_->now_ns() - t.start_ns;
  const int64_t j = elapsed / period;
  if (j >= t.k) return;  // the train ends at this instant: its end event stays
  st_->engine.Cancel(t.end_event);
  t.end_event = 0;
  TrainBucketsDone(stage, j);
  t.active = false;
  const int part = t.part;
  const double start = double(t.start_ns) * 1e-9;
  comm::ResumePlan(&st_->net, *ch.parts[size_t(part)].plan, *t.timeline, elapsed - j * period,
                   [this, stage, part, start] {
                     AddStageShare(stage, -channels_[size_t(stage)].share);
                     RunBucket(stage, part + 1, start);
                   });
}

bool GradientSync::SetUpPart(int stage, int part) {
  Channel& ch = channels_[size_t(stage)];
  Channel::Part& p = ch.parts[size_t(part)];
  if (p.set) return true;
  p.set = true;
  comm::CollectiveSpec& spec = p.spec;
  spec = {ch.plan.op, comm::Algo::kAuto, {}, 0};
  if (part == 0 && ch.group.size() > 1) {
    spec.gpus = ch.group;
    spec.bytes = uint64_t(ch.plan.bytes);
  } else if (part == 1 && ch.replica_group.size() > 1) {
    spec.op = comm::Op::kAllReduce;
    spec.gpus = ch.replica_group;
    spec.bytes = uint64_t(ch.plan.bytes / double(ch.group.size()));
  } else if (part == 2 && ch.expert_group.size() > 1 && ch.plan.expert_bytes > 0) {
    spec.gpus = ch.expert_group;
    spec.bytes = uint64_t(ch.plan.expert_bytes);
  }
  if (spec.bytes == 0) spec.gpus.clear();
  if (!spec.gpus.empty() && OnFlows(spec)) {
    Result<const comm::CollectivePlanCache::Plan*> plan =
        comm::PlanCollective(*st_->topo, spec, &plans_);
    if (!plan.ok()) {
      st_->error = plan.status();
      return false;
    }
    p.plan = *plan;
  }
  return true;
}

// Part 0: the dense gradients over DP × CP (or the shard group); part 1: with hybrid sharding,
// the all-reduce of this rank's shard across the shard groups; part 2: the expert gradients
// over expert-DP. Parts with nothing to move are skipped.
void GradientSync::RunBucket(int stage, int part, double start) {
  Channel& ch = channels_[size_t(stage)];
  if (part > 2) {
    ch.running = false;
    ch.next++;
    ch.done++;
    // (Its arguments only when tracing: a step may reduce a million buckets.)
    if (st_->trace.enabled()) {
      st_->trace.Slice(ch.group[0], kTrackDp, "dp grad reduce", "dp", start, st_->now() - start,
                       {{"op", std::string(comm::OpName(ch.plan.op))},
                        {"bucket", int64_t(ch.next)},
                        {"bytes", int64_t(ch.plan.bytes)},
                        {"expert_bytes", int64_t(ch.plan.expert_bytes)},
                        {"ranks", int64_t(ch.group.size())}});
    }
    if (ch.done == size_t(ch.plan.count)) MaybeReduced(stage);
    ReleaseDrains(stage);
    Pump(stage);
    return;
  }
  Channel::Part& p = ch.parts[size_t(part)];
  if (!SetUpPart(stage, part)) return;
  if (p.spec.gpus.empty()) {
    RunBucket(stage, part + 1, start);
    return;
  }
  auto done = [this, stage, part, start] {
    AddStageShare(stage, -channels_[size_t(stage)].share);
    RunBucket(stage, part + 1, start);
  };
  Result<comm::CollectiveEstimate> r = p.plan != nullptr
                                           ? comm::RunPlan(&st_->net, *p.plan, std::move(done))
                                           : StartCollective(p.spec, std::move(done));
  if (!r.ok()) {
    st_->error = r.status();
    return;
  }
  // The bucket's channels leave the stage's backward (or whatever it computes) fewer SMs.
  if (!p.has_share) {
    p.has_share = true;
    p.share = ShareOf(p.spec, *r);
  }
  ch.share = p.share;
  AddStageShare(stage, ch.share);
}

// A stage's replicas are reduced when all their backwards are done and every bucket of the
// stage has been reduced. When every stage is, the gradient-norm barrier releases.
void GradientSync::MaybeReduced(int stage) {
  Channel& ch = channels_[size_t(stage)];
  if (ch.done < size_t(ch.plan.count)) return;
  const double now = st_->now();
  for (size_t r = 0; r < st_->replicas.size(); ++r) {
    Executor& e = st_->execs[r * size_t(st_->c.pp) + size_t(stage)];
    if (e.compute_done_s < 0 || e.reduced_s >= 0) continue;
    e.reduced_s = now;
    e.b.exposed_dp_comm_s += now - e.compute_done_s;
    st_->trace.Slice(e.gpu, kTrackCompute, "wait for dp reduction", "idle", e.compute_done_s,
                     now - e.compute_done_s, {{"stage", int64_t(stage)}});
    reduced_count_++;
  }
  if (reduced_count_ == st_->execs.size()) ReduceTiedEmbedding();
}

// Megatron ties the output layer to the word embedding: with pp > 1 the first and last stages
// each hold a copy, and after the DP reduction they all-reduce its gradient
// (_allreduce_embedding_grads: vocab/tp × h per TP rank) before the optimizer. Its time is
// exposed DP-side communication for those two stages.
void GradientSync::ReduceTiedEmbedding() {
  const int pp = st_->c.pp;
  if (pp == 1 || !st_->cfg.model.tied_embeddings) {
    Barrier();
    return;
  }
  const double start = st_->now();
  const double bytes = TiedEmbeddingBytes(st_->cfg, st_->nic_share);
  pending_embedding_ = st_->replicas.size();
  for (size_t r = 0; r < st_->replicas.size(); ++r) {
    const int first = int(r) * pp, last = first + pp - 1;
    comm::CollectiveSpec spec{comm::Op::kAllReduce,
                              comm::Algo::kAuto,
                              {st_->exec(first).gpu, st_->exec(last).gpu},
                              uint64_t(bytes)};
    Result<comm::CollectiveEstimate> res = StartCollective(spec, [this, first, last, start, bytes] {
      const double now = st_->now();
      for (int ei : {first, last}) {
        Executor& e = st_->exec(ei);
        // Until the all-reduce could start this stage waited on the others (as at the
        // barrier); then on the all-reduce itself.
        e.b.bubble_s += start - e.reduced_s;
        e.b.exposed_dp_comm_s += now - start;
        st_->trace.Slice(e.gpu, kTrackEmbedding, "tied embedding all_reduce", "dp", start,
                         now - start, {{"bytes", int64_t(bytes)}, {"ranks", int64_t(2)}});
        e.reduced_s = now;
      }
      if (--pending_embedding_ == 0) Barrier();
    });
    if (!res.ok()) st_->error = res.status();
  }
}

void GradientSync::Barrier() {
  const double now = st_->now();
  for (size_t i = 0; i < st_->execs.size(); ++i) {
    Executor& e = st_->execs[i];
    const double wait = now - e.reduced_s;
    // Waiting here for other stages is the pipeline drain when there are stages.
    if (st_->c.pp > 1) {
      e.b.bubble_s += wait;
    } else {
      e.b.other_s += wait;
    }
    st_->trace.Slice(e.gpu, kTrackCompute, "grad-norm barrier", "idle", e.reduced_s, wait,
                     {{"stage", int64_t(e.stage)}});
    const double opt = OptimizerSeconds(st_->cfg, e.stage) * e.slow;
    e.b.optimizer_s += opt;
    st_->trace.Slice(e.gpu, kTrackCompute, "optimizer", "optimizer", now, opt,
                     {{"stage", int64_t(e.stage)}, {"slowdown", e.slow}});
    if (!(opt < StepState::kMaxDurationS)) {
      st_->error = StepState::TooLong(opt);
      return;
    }
    st_->engine.Schedule(StepState::Delay(opt), [this, i] { OptimizerDone(int(i)); });
  }
}

void GradientSync::OptimizerDone(int ei) {
  Executor& e = st_->exec(ei);
  const double now = st_->now();
  e.opt_end_s = now;
  const parallelism::ParallelConfig& c = st_->c;
  Channel& ch = channels_[size_t(e.stage)];
  if (c.zero_stage == 0 || c.zero_stage == 3 || ch.plan.count == 0) {
    Finish(ei, now);
    return;
  }
  ch.optimizer_done++;
  if (ch.optimizer_done < int(st_->replicas.size())) return;
  GatherWeights(e.stage, now);
}

// ZeRO-1/2 (Megatron's distributed optimizer): all-gather the updated bf16 weights, dense over
// DP × CP and experts over expert-DP. With overlap_param_gather the gathers run under the next
// step's forward (Megatron dispatches them per bucket and each forward waits only for its own
// bucket), so only what exceeds one micro-batch's forward of the stage is exposed.
void GradientSync::GatherWeights(int stage, double now) {
  Channel& ch = channels_[size_t(stage)];
  const double dense =
      ch.group.size() > 1 ? ZeroWeightGatherBytes(st_->cfg, stage, st_->nic_share) : 0.0;
  const double expert = ch.expert_group.size() > 1
                            ? ZeroExpertWeightGatherBytes(st_->cfg, stage, st_->nic_share)
                            : 0.0;
  auto finish_all = [this, stage, now, dense, expert](double t) {
    st_->trace.Slice(channels_[size_t(stage)].group[0], kTrackDp, "zero weight all_gather", "dp",
                     now, t - now,
                     {{"bytes", int64_t(dense)},
                      {"expert_bytes", int64_t(expert)},
                      {"ranks", int64_t(channels_[size_t(stage)].group.size())}});
    double end = t, slowed = 0;
    if (st_->c.overlap_param_gather) {
      // The next step's first forward runs beside the gathers, slowed by their SMs; the step
      // is charged what the forward and the gathers together take beyond that forward.
      const OverlapCost o = OverlapBeside(t - now, st_->forward_s[size_t(stage)],
                                          channels_[size_t(stage)].gather_share);
      slowed = o.slowed;
      end = now + o.exposed + o.slowed;
    }
    for (size_t rr = 0; rr < st_->replicas.size(); ++rr) {
      Finish(int(rr) * st_->c.pp + stage, end, slowed);
    }
  };
  auto run_expert = [this, stage, expert, finish_all] {
    if (expert <= 0) {
      finish_all(st_->now());
      return;
    }
    comm::CollectiveSpec spec{comm::Op::kAllGather, comm::Algo::kAuto,
                              channels_[size_t(stage)].expert_group, uint64_t(expert)};
    Result<comm::CollectiveEstimate> r =
        StartCollective(spec, [this, finish_all] { finish_all(st_->now()); });
    if (!r.ok()) {
      st_->error = r.status();
      return;
    }
    Channel& c = channels_[size_t(stage)];
    c.gather_share = std::max(c.gather_share, ShareOf(spec, *r));
  };
  if (dense <= 0) {
    run_expert();
    return;
  }
  comm::CollectiveSpec spec{comm::Op::kAllGather, comm::Algo::kAuto, ch.group, uint64_t(dense)};
  Result<comm::CollectiveEstimate> r = StartCollective(spec, run_expert);
  if (!r.ok()) {
    st_->error = r.status();
    return;
  }
  ch.gather_share = ShareOf(spec, *r);
}

// Time after its optimizer (waiting for the ZeRO weight all-gather) is exposed DP communication.
void GradientSync::Finish(int ei, double end, double slowed) {
  Executor& e = st_->exec(ei);
  e.b.compute_slowed_s += slowed;
  if (slowed > 0) {
    // Drawn at the step's end, where the step is charged for it.
    st_->trace.Slice(e.gpu, kTrackCompute, "slowed by overlapped comm", "compute", end - slowed,
                     slowed, {{"overlapped", "zero weight all_gather beside the next forward"}});
  }
  e.b.exposed_dp_comm_s += end - e.opt_end_s - slowed;
  e.end_s = end;
  e.finished = true;
}

}  // namespace trainsim::step
