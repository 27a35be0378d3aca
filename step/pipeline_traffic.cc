// The layer collectives of a pass that run on the network as flows (docs/step-simulation.md,
// "Layer traffic on the network"): context parallelism's K/V exchange and expert parallelism's
// token exchange. Each pass runs its group's bytes beside the pipeline sends and the DP
// reduction: the share the closed form leaves exposed after the pass's other work, holding the
// pass until it has drained, and the share overlap hides from the pass's start, beside its
// compute. Alone on the network the pass lasts what the closed form gives; with other traffic
// on its links the flows take longer and the excess is exposed CP or EP time.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "comm/schedule.h"
#include "step/pipeline.h"

namespace trainsim::step {

using parallelism::Task;

namespace {

// CP's ring exchange: every rank sends `bytes` to the next at once, one class of flows per hop
// class (the pairs inside a node, those that cross the network), at NCCL's Simple protocol (a
// send/recv of K/V chunks is bulk); it ends when the slowest pair has, after the slowest pair's
// hop latency.
comm::TransferSchedule RingExchange(const comm::Topology& topo, const std::vector<int>& group,
                                    uint64_t bytes) {
  comm::TransferSchedule s;
  s.family = comm::LatencyFamily::kRing;
  std::vector<comm::Hop> hops;
  for (size_t i = 0; i < group.size(); ++i) {
    comm::PipelinedTransfer t;
    t.src_gpu = group[i];
    t.dst_gpu = group[(i + 1) % group.size()];
    t.payload_bytes = bytes;
    const comm::HopClass hop = comm::HopClassOf(topo, t.src_gpu, t.dst_gpu);
    t.flow_class = hop == comm::HopClass::kNvlink ? 0 : 1;
    s.transfers.push_back(t);
    hops.push_back(comm::MakeHop(topo, t.src_gpu, t.dst_gpu));
  }
  s.chain_latency_s = [hops](const comm::ProtocolCosts& costs) {
    double worst = 0;
    for (const comm::Hop& h : hops) worst = std::max(worst, comm::HopLatency(costs, h));
    return worst;
  };
  return s;
}

// The pass's collectives of a group as one exchange of their summed bytes per rank: CP's ring
// (above), the rest (EP's all-to-alls and all-gathers, CP's all-gather and Ulysses all-to-alls)
// as one all-to-all, whose wire volume per rank is an all-gather's or reduce-scatter's of the
// same size. Its time alone on the idle topology (negative if comm cannot time it).
double ExchangeSeconds(const comm::Topology& topo, bool ring, const std::vector<int>& group,
                       uint64_t bytes) {
  if (ring) {
    return comm::EvaluateSchedule(topo, RingExchange(topo, group, bytes), {comm::Protocol::kSimple})
        .front();
  }
  const Result<comm::CollectiveEstimate> r =
      comm::EstimateCollective(topo, {comm::Op::kAllToAll, comm::Algo::kAuto, group, bytes});
  return r.ok() ? r->time.seconds() : -1;
}

}  // namespace

void Pipeline::InitTraffic(TrafficKind kind) {
  Traffic& tr = traffic_[kind];
  const bool cp = kind == kCpTraffic;
  tr.on = true;
  tr.ring = cp && st_->c.cp_comm == parallelism::CpComm::kP2P;
  const size_t chunks = costs_.size();
  tr.pass.assign(2 * chunks, PassTraffic{});
  std::map<std::vector<int>, int> meeting;
  for (const Executor& e : st_->execs) {
    tr.groups.push_back(cp ? st_->layout->CpGroup(e.gpu) : st_->layout->EpGroup(e.gpu));
    const auto [it, first] = meeting.try_emplace(tr.groups.back(), int(tr.meetings.size()));
    if (first) tr.meetings.emplace_back();
    tr.meetings[size_t(it->second)].members++;
    tr.meeting_of.push_back(it->second);
    tr.leader.push_back(first);
  }
  const std::vector<int>& group = tr.groups.front();
  for (size_t j = 0; j < chunks; ++j) {
    const ChunkCost& k = costs_[j];
    for (int dir = 0; dir < 2; ++dir) {
      const bool f = dir == 0;
      const double raw =
          cp ? (f ? k.fwd_cp_raw_s : k.bwd_cp_raw_s) : (f ? k.fwd_ep_raw_s : k.bwd_ep_raw_s);
      const double bytes =
          cp ? (f ? k.fwd_cp_bytes : k.bwd_cp_bytes) : (f ? k.fwd_ep_bytes : k.bwd_ep_bytes);
      const double exposed_s = cp ? (f ? k.fwd_cp_s : k.bwd_cp_s) : (f ? k.fwd_ep_s : k.bwd_ep_s);
      if (!(raw > 0) || !(bytes >= 1)) continue;
      double exposed = bytes * std::clamp(exposed_s / raw, 0.0, 1.0);
      const double hidden = bytes - exposed;
      double latency = 0;
      if (exposed >= 1) {
        const double alone = ExchangeSeconds(*st_->topo, tr.ring, group, uint64_t(exposed));
        if (alone > exposed_s) {
          exposed *= exposed_s / alone;
        } else if (alone >= 0) {
          latency = exposed_s - alone;
        }
      }
      PassTraffic& p = tr.pass[size_t(dir) * chunks + j];
      p = {uint64_t(exposed), uint64_t(hidden), exposed_s, latency};
      if (p.exposed == 0) p.exposed_s = 0;  // nothing on flows: it stays in the pass's own time
    }
  }
}

const Pipeline::PassTraffic& Pipeline::PassOf(TrafficKind kind, const Task& t, int j) const {
  return traffic_[kind].pass[(t.forward ? 0 : costs_.size()) + size_t(j)];
}

Status Pipeline::StartExchange(TrafficKind kind, int ei, uint64_t bytes,
                               std::function<void()> done) {
  const Traffic& tr = traffic_[kind];
  const std::vector<int>& g = tr.groups[size_t(ei)];
  if (!tr.ring) {
    return comm::RunCollective(&st_->net, {comm::Op::kAllToAll, comm::Algo::kAuto, g, bytes},
                               std::move(done), &traffic_plans_)
        .status();
  }
  comm::RunPreparedSchedule(&st_->net, RingPlanOf(ei, bytes).prepared, std::move(done));
  return Status::Ok();
}

Pipeline::RingPlan& Pipeline::RingPlanOf(int ei, uint64_t bytes) {
  const std::vector<int>& g = traffic_[kCpTraffic].groups[size_t(ei)];
  RingPlan& ring = ring_plans_[{g.front(), bytes}];
  if (ring.prepared == nullptr) {
    ring.prepared = comm::PrepareSchedule(*st_->topo, RingExchange(*st_->topo, g, bytes),
                                          comm::Protocol::kSimple);
  }
  return ring;
}

// Folded exchanges. A CP ring exchange that starts while nothing else crosses its links (no
// flow, no other folded run: FlowNetwork::LinksFree) ends when its run alone does
// (comm::TimeAlone, timed once per group and size), so it runs as one event, as the gradient
// buckets' trains do (gradient_sync.h). A watch on its links stops the fold the instant anything
// else is to cross them: the run goes on as flows from where its run alone is
// (comm::ResumePreparedSchedule), and shares the links from then on. Exact up to the network's
// nanosecond rounding. An exposed phase folds its wait for the latency and its closed-form
// floor too: it ends at max(floor, latency + the run alone). Each executor whose ring can
// resume follows its CP group's links as one set: the first 32 to try, half the sets a network
// follows (FlowNetwork::kMaxLinkSets); the others' exchanges run as flows.
bool Pipeline::TryFold(int ei, uint64_t bytes, bool exposed, const Task& t, int j, double latency_s,
                       double phase_s) {
  const Traffic& tr = traffic_[kCpTraffic];
  if (!st_->cfg.fold_exchanges || !tr.ring) return false;
  if (tr.meetings[size_t(tr.meeting_of[size_t(ei)])].members != 1) return false;
  if (folds_.empty()) folds_.resize(st_->execs.size());
  Fold& f = folds_[size_t(ei)];
  if (f.set == -1 || f.active) return false;
  RingPlan& plan = RingPlanOf(ei, bytes);
  if (!plan.timed) {
    plan.timed = true;
    std::optional<comm::AloneTimeline> alone =
        comm::TimeAlone(st_->net, plan.prepared, st_->scratch_net());
    if (alone.has_value() && alone->resumable && alone->total_ns > 0) {
      plan.alone = std::make_shared<const comm::AloneTimeline>(std::move(*alone));
    }
  }
  // A ring that cannot resume (its class splits alone) takes no link set.
  if (plan.alone == nullptr) return false;
  if (f.set == -2) {
    // Half the network's sets at most: the gradient buckets' trains follow one per stage.
    f.set = fold_sets_ < comm::FlowNetwork::kMaxLinkSets / 2
                ? st_->net.FollowLinks(comm::ScheduleLinks(*plan.prepared))
                : -1;
    fold_sets_ += f.set >= 0 ? 1 : 0;
  }
  if (f.set < 0 || !st_->net.LinksFree(f.set)) return false;
  f.active = true;
  f.exposed = exposed;
  f.plan = &plan;
  f.t = t;
  f.j = j;
  f.start_ns = st_->now_ns();
  f.latency_ns = exposed ? StepState::Delay(latency_s).nanos() : 0;
  f.phase_ns = exposed ? StepState::Delay(phase_s).nanos() : 0;
  f.end_ns = f.start_ns + std::max(f.phase_ns, f.latency_ns + plan.alone->total_ns);
  f.watch = st_->net.Watch(f.set, [this, ei] { FoldTouched(ei); });
  f.end = st_->engine.ScheduleAt(sim::Time::Nanos(f.end_ns), [this, ei] { FoldEnded(ei); });
  return true;
}

void Pipeline::FoldEnded(int ei) {
  Fold& f = folds_[size_t(ei)];
  f.active = false;
  f.end = 0;
  if (f.watch != 0) st_->net.Unwatch(f.watch);
  f.watch = 0;
  if (!f.exposed) return;
  st_->exec(ei).net_pending = 1;
  PhasePartDone(ei, f.t, f.j, kCpTraffic);
}

// Something else is to cross the folded run's links now (the watch has ended).
void Pipeline::FoldTouched(int ei) {
  Fold& f = folds_[size_t(ei)];
  f.watch = 0;
  const int64_t now = st_->now_ns();
  if (!f.active || now >= f.end_ns) return;  // it ends at this instant: its end event stays
  st_->engine.Cancel(f.end);
  f.end = 0;
  f.active = false;
  const std::shared_ptr<const comm::PreparedSchedule>& prepared = f.plan->prepared;
  const comm::AloneTimeline& alone = *f.plan->alone;
  const int64_t elapsed = now - f.start_ns - f.latency_ns;  // into the run (< 0: not started)
  if (!f.exposed) {
    comm::ResumePreparedSchedule(&st_->net, prepared, alone, elapsed, [] {});
    return;
  }
  // As NetPhase's two parts: the closed form's floor, and the run (or its wait to start).
  Executor& e = st_->exec(ei);
  e.net_pending = 2;
  const Task t = f.t;
  const int j = f.j;
  auto part_done = [this, ei, t, j] { PhasePartDone(ei, t, j, kCpTraffic); };
  if (now < f.start_ns + f.phase_ns) {
    st_->engine.ScheduleAt(sim::Time::Nanos(f.start_ns + f.phase_ns), part_done);
  } else {
    --e.net_pending;
  }
  if (elapsed < 0) {
    st_->engine.ScheduleAt(sim::Time::Nanos(f.start_ns + f.latency_ns),
                           [this, ei, t, j] { PhaseFlows(ei, t, j, kCpTraffic); });
  } else if (elapsed < alone.total_ns) {
    comm::ResumePreparedSchedule(&st_->net, prepared, alone, elapsed, part_done);
  } else {
    --e.net_pending;
  }
}

double Pipeline::StartHiddenTraffic(int ei, const Task& t, int j) {
  double exposed_s = 0;
  for (int kind = 0; kind < kTrafficKinds; ++kind) {
    if (!traffic_[kind].on) continue;
    const PassTraffic& p = PassOf(TrafficKind(kind), t, j);
    exposed_s += p.exposed_s;
    if (p.hidden > 0 && traffic_[kind].leader[size_t(ei)]) {
      if (kind == kCpTraffic && TryFold(ei, p.hidden, false, t, j, 0, 0)) continue;
      const Status s = StartExchange(TrafficKind(kind), ei, p.hidden, [] {});
      if (!s.ok()) st_->error = s;
    }
  }
  return exposed_s;
}

void Pipeline::NetPhase(int ei, Task t, int j, int kind) {
  while (kind < kTrafficKinds &&
         (!traffic_[kind].on || PassOf(TrafficKind(kind), t, j).exposed == 0)) {
    ++kind;
  }
  if (kind == kTrafficKinds) {
    SettleTask(ei, t, j, 0);
    return;
  }
  Executor& e = st_->exec(ei);
  const PassTraffic& p = PassOf(TrafficKind(kind), t, j);
  st_->SetComputeRate(e, 0.0);  // the pass waits for the exchange
  e.net_pending = 2;
  e.net_phase_start = st_->now();
  e.net_phase_s = p.exposed_s;
  if (kind == kCpTraffic && TryFold(ei, p.exposed, true, t, j, p.latency_s, p.exposed_s)) return;
  st_->engine.Schedule(StepState::Delay(p.exposed_s),
                       [this, ei, t, j, kind] { PhasePartDone(ei, t, j, kind); });
  const sim::Time latency = StepState::Delay(p.latency_s);
  if (latency > sim::Time::Zero()) {
    st_->engine.Schedule(latency, [this, ei, t, j, kind] { PhaseFlows(ei, t, j, kind); });
  } else {
    PhaseFlows(ei, t, j, kind);
  }
}

// The exposed exchange, once every executor of the group is ready for it.
void Pipeline::PhaseFlows(int ei, Task t, int j, int kind) {
  Traffic& tr = traffic_[kind];
  Meeting& meet = tr.meetings[size_t(tr.meeting_of[size_t(ei)])];
  meet.waiting.emplace_back(ei, t, j);
  if (int(meet.waiting.size()) < meet.members) return;
  auto waiting = std::move(meet.waiting);
  meet.waiting.clear();
  const Status s = StartExchange(TrafficKind(kind), ei, PassOf(TrafficKind(kind), t, j).exposed,
                                 [this, waiting, kind] {
                                   for (const auto& [w, wt, wj] : waiting) {
                                     PhasePartDone(w, wt, wj, kind);
                                   }
                                 });
  if (!s.ok()) st_->error = s;
}

void Pipeline::PhasePartDone(int ei, Task t, int j, int kind) {
  Executor& e = st_->exec(ei);
  if (--e.net_pending > 0) return;
  // What the other traffic on the group's links, and the group's slower ranks, added to the
  // exposed exchange (below the engine's 1 ns tick: the closed form's time, rounded).
  const double extra = st_->now() - e.net_phase_start - e.net_phase_s;
  const bool cp = kind == kCpTraffic;
  (cp ? e.b.exposed_cp_comm_s : e.b.exposed_ep_comm_s) += extra;
  if (extra > 1e-9) {
    st_->trace.Slice(
        e.gpu, kTrackCompute,
        cp ? "k/v exchange slowed by other traffic" : "all-to-all slowed by other traffic", "idle",
        st_->now() - extra, extra,
        {{"micro_batch", t.micro_batch}, {cp ? "cp_wait_s" : "ep_wait_s", extra}});
  }
  NetPhase(ei, t, j, kind + 1);
}

}  // namespace trainsim::step
