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
  std::shared_ptr<const comm::PreparedSchedule>& ring = ring_plans_[{g.front(), bytes}];
  if (ring == nullptr) {
    ring = comm::PrepareSchedule(*st_->topo, RingExchange(*st_->topo, g, bytes),
                                 comm::Protocol::kSimple);
  }
  comm::RunPreparedSchedule(&st_->net, ring, std::move(done));
  return Status::Ok();
}

double Pipeline::StartHiddenTraffic(int ei, const Task& t, int j) {
  double exposed_s = 0;
  for (int kind = 0; kind < kTrafficKinds; ++kind) {
    if (!traffic_[kind].on) continue;
    const PassTraffic& p = PassOf(TrafficKind(kind), t, j);
    exposed_s += p.exposed_s;
    if (p.hidden > 0 && traffic_[kind].leader[size_t(ei)]) {
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
