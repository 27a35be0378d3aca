// How comm's collectives are put together (the contract is in collective.h).
//
// Two views of the same model, which agree within 1% on an idle network (tests hold them to it):
//   - EstimateCollective: the closed-form alpha-beta cost, stage by stage, with no events;
//   - RunCollective: the step-by-step expansion into flows on a FlowNetwork, so concurrent
//     traffic (a DP all-reduce and PP sends on one NIC) slows each other down.
// Algorithms (each in its own file): ring all-reduce / reduce-scatter / all-gather
// (comm/ring.h), NCCL's double binary tree all-reduce (comm/tree.h), hierarchical all-reduce
// (comm/hierarchical.h), pipelined broadcast (comm/broadcast.h), direct all-to-all and
// send/recv (comm/direct.h), and where the hardware has them NVLS / NVLS-tree (comm/nvls.h),
// CollNet with IB SHARP (comm/collnet.h) and PAT (comm/pat.h). Protocol costs (LL, LL128,
// Simple) follow NCCL's tuning.cc
// (comm/nccl_model.h). Algo::kAuto picks the fastest (algorithm, protocol) for the message
// size and group, as NCCL's tuner does, and the estimate says which it picked.
//
// A link on a collective's path that stays down means on_done never runs: NCCL would hang until
// its timeout, which is the caller's to model.

#include "comm/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "comm/broadcast.h"
#include "comm/collnet.h"
#include "comm/direct.h"
#include "comm/hierarchical.h"
#include "comm/nccl_model.h"
#include "comm/nvls.h"
#include "comm/pat.h"
#include "comm/ring.h"
#include "comm/schedule.h"
#include "comm/tree.h"

namespace trainsim::comm {

namespace {

constexpr Op kOps[] = {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather,
                       Op::kBroadcast, Op::kAllToAll,      Op::kSendRecv};
constexpr Algo kAlgos[] = {Algo::kAuto,         Algo::kRing,    Algo::kTree,
                           Algo::kHierarchical, Algo::kDirect,  Algo::kNvls,
                           Algo::kNvlsTree,     Algo::kCollNet, Algo::kPat};

template <typename T, size_t N, typename NameFn>
std::string Names(const T (&values)[N], NameFn name) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += ", ";
    out += name(values[i]);
  }
  return out;
}

Result<TransferSchedule> BuildSchedule(const Topology& topology, Op op, Algo algo,
                                       const std::vector<int>& gpus, uint64_t bytes) {
  switch (algo) {
    case Algo::kRing:
      if (op == Op::kBroadcast) return BuildBroadcastSchedule(topology, gpus, bytes);
      return BuildRingSchedule(topology, op, gpus, bytes);
    case Algo::kTree:
      return BuildTreeSchedule(topology, gpus, bytes);
    case Algo::kHierarchical:
      return BuildHierarchicalSchedule(topology, gpus, bytes);
    case Algo::kDirect:
      if (op == Op::kSendRecv) return BuildSendRecvSchedule(topology, gpus, bytes);
      return BuildAllToAllSchedule(topology, gpus, bytes);
    case Algo::kNvls:
      return BuildNvlsSchedule(topology, gpus, bytes);
    case Algo::kNvlsTree:
      return BuildNvlsTreeSchedule(topology, gpus, bytes);
    case Algo::kCollNet:
      return BuildCollNetSchedule(topology, gpus, bytes);
    case Algo::kPat:
      return BuildPatSchedule(topology, op, gpus, bytes);
    case Algo::kAuto:
      break;
  }
  return Status::Internal("BuildSchedule called with algo auto");
}

struct Choice {
  Algo algo = Algo::kRing;
  Protocol protocol = Protocol::kSimple;
  double time_s = std::numeric_limits<double>::infinity();
  TransferSchedule schedule;
  std::shared_ptr<ScheduleRoutes> routes;  // the schedule's, routed once
};

// NCCL's ceiling on LL's bus bandwidth (tuning.cc: Ring/LL min(llMaxBw, busBw/2), Tree/LL
// min(llMaxBw, busBw/3.8)) for Ring and Tree: where the schedule's LL drain is shorter than the
// bus bytes at the ceiling, LL's wire bytes are scaled up to it (schedule->ll_wire_scale) and
// times[LL] (indexed as `protocols`) re-priced, so the expansion runs what the tuner priced.
// Bus bytes as NCCL's tuner counts them: the ring's nsteps/nRanks (BusBandwidthFactor), the
// tree's 2 (its busBw → algBw ratio of 1/2).
void ApplyLlCeiling(const Topology& topology, const CollectiveSpec& spec, Algo algo,
                    const std::vector<Protocol>& protocols, TransferSchedule* schedule,
                    const ScheduleRoutes* routes, std::vector<double>* times) {
  if (algo != Algo::kRing && algo != Algo::kTree) return;
  const auto ll = std::find(protocols.begin(), protocols.end(), Protocol::kLL);
  if (ll == protocols.end()) return;
  const size_t k = size_t(ll - protocols.begin());
  const TopologySpec& t = topology.spec();
  const int nodes = topology.NodesSpanned(spec.gpus);
  const double ceiling_Bps = 1e9 * (nodes <= 1   ? t.ll_max_one_node_GBps
                                    : nodes == 2 ? t.ll_max_two_nodes_GBps
                                                 : t.ll_max_more_nodes_GBps);
  const double bus_bytes =
      double(spec.bytes) *
      (algo == Algo::kTree ? 2.0 : BusBandwidthFactor(spec.op, int(spec.gpus.size())));
  const ProtocolCosts costs = NcclCosts(schedule->family, Protocol::kLL);
  const double latency = schedule->launches * costs.base_s +
                         (schedule->chain_latency_s ? schedule->chain_latency_s(costs) : 0.0);
  const double drain = (*times)[k] - latency;
  const double floor_s = bus_bytes / ceiling_Bps;
  if (!(drain > 0) || !std::isfinite(drain) || floor_s <= drain) return;
  schedule->ll_wire_scale = floor_s / drain;
  // At the ceiling LL drains in at least floor_s where the schedule's efficiency is 1 (as
  // Ring's and Tree's are): its unscaled wire bytes are then exact, the scaled ones W · s
  // rounded up (TransferWireBytes), and a drain grows with them (the margin is for the floating
  // point). Below 1 the unscaled bytes are rounded up too, and a few-byte payload's scaled
  // drain can come in under s times its unscaled one. Where even floor_s loses to another
  // protocol, LL cannot be chosen and its exact price is not needed: a large collective, whose
  // re-pricing would be a whole sweep of its transfers (a sixth of a 1 GiB tree's planning on
  // 4,096 GPUs).
  if (schedule->efficiency >= 1.0) {
    const double bound = latency + floor_s * (1 - 1e-3);
    for (size_t j = 0; j < times->size(); ++j) {
      if (j != k && (*times)[j] < bound) {
        (*times)[k] = bound;
        return;
      }
    }
  }
  (*times)[k] = EvaluateSchedule(topology, *schedule, {Protocol::kLL}, nullptr, routes).front();
}

// Prices every candidate (algorithm, protocol) and keeps the fastest; the first wins ties.
Result<Choice> Choose(const Topology& topology, const CollectiveSpec& spec) {
  std::vector<Algo> candidates;
  if (spec.algo == Algo::kAuto) {
    candidates = AlgorithmsFor(spec.op);
    for (Algo a : HardwareAlgorithmsFor(spec.op)) candidates.push_back(a);
  } else {
    candidates = {spec.algo};
  }
  const std::vector<Protocol> protocols(std::begin(kAllProtocols), std::end(kAllProtocols));
  Choice best;
  Status last_error = Status::Ok();
  bool found = false;
  for (Algo algo : candidates) {
    Result<TransferSchedule> schedule =
        BuildSchedule(topology, spec.op, algo, spec.gpus, spec.bytes);
    if (!schedule.ok()) {
      last_error = schedule.status();
      continue;
    }
    std::shared_ptr<ScheduleRoutes> routes = RouteSchedule(topology, *schedule);
    std::vector<double> times = EvaluateSchedule(topology, *schedule, protocols, nullptr, &*routes);
    ApplyLlCeiling(topology, spec, algo, protocols, &*schedule, &*routes, &times);
    bool improved = false;
    for (size_t k = 0; k < protocols.size(); ++k) {
      if (times[k] < best.time_s) {
        best.time_s = times[k];
        best.algo = algo;
        best.protocol = protocols[k];
        improved = true;
      }
    }
    if (improved) {
      best.schedule = std::move(schedule).value();
      best.routes = std::move(routes);
    }
    found = true;
  }
  if (!found) return last_error;
  return best;
}

}  // namespace

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kAllReduce:
      return "all_reduce";
    case Op::kReduceScatter:
      return "reduce_scatter";
    case Op::kAllGather:
      return "all_gather";
    case Op::kBroadcast:
      return "broadcast";
    case Op::kAllToAll:
      return "all_to_all";
    case Op::kSendRecv:
      return "send_recv";
  }
  return "?";
}

std::string_view AlgoName(Algo algo) {
  switch (algo) {
    case Algo::kAuto:
      return "auto";
    case Algo::kRing:
      return "ring";
    case Algo::kTree:
      return "tree";
    case Algo::kHierarchical:
      return "hierarchical";
    case Algo::kDirect:
      return "direct";
    case Algo::kNvls:
      return "nvls";
    case Algo::kNvlsTree:
      return "nvls_tree";
    case Algo::kCollNet:
      return "collnet";
    case Algo::kPat:
      return "pat";
  }
  return "?";
}

std::string_view ProtocolName(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL:
      return "LL";
    case Protocol::kLL128:
      return "LL128";
    case Protocol::kSimple:
      return "Simple";
  }
  return "?";
}

Result<Op> ParseOp(std::string_view name) {
  for (Op op : kOps) {
    if (OpName(op) == name) return op;
  }
  return Status::InvalidArgument("unknown op '" + std::string(name) + "'; valid ops: " +
                                 Names(kOps, [](Op o) { return std::string(OpName(o)); }));
}

Result<Algo> ParseAlgo(std::string_view name) {
  for (Algo algo : kAlgos) {
    if (AlgoName(algo) == name) return algo;
  }
  return Status::InvalidArgument(
      "unknown algorithm '" + std::string(name) +
      "'; valid algorithms: " + Names(kAlgos, [](Algo a) { return std::string(AlgoName(a)); }));
}

std::vector<Algo> AlgorithmsFor(Op op) {
  switch (op) {
    case Op::kAllReduce:
      return {Algo::kRing, Algo::kTree, Algo::kHierarchical};
    case Op::kReduceScatter:
    case Op::kAllGather:
    case Op::kBroadcast:
      return {Algo::kRing};
    case Op::kAllToAll:
    case Op::kSendRecv:
      return {Algo::kDirect};
  }
  return {};
}

std::vector<Algo> HardwareAlgorithmsFor(Op op) {
  switch (op) {
    case Op::kAllReduce:
      return {Algo::kNvls, Algo::kNvlsTree, Algo::kCollNet};
    case Op::kReduceScatter:
    case Op::kAllGather:
      return {Algo::kPat};
    case Op::kBroadcast:
    case Op::kAllToAll:
    case Op::kSendRecv:
      return {};
  }
  return {};
}

double BusBandwidthFactor(Op op, int n) {
  const double nd = static_cast<double>(n);
  switch (op) {
    case Op::kAllReduce:
      return 2.0 * (nd - 1.0) / nd;
    case Op::kReduceScatter:
    case Op::kAllGather:
    case Op::kAllToAll:
      return (nd - 1.0) / nd;
    case Op::kBroadcast:
    case Op::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

std::vector<int> FirstGpus(int n) {
  std::vector<int> gpus(static_cast<size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) gpus[static_cast<size_t>(i)] = i;
  return gpus;
}

Status ValidateCollective(const Topology& topology, const CollectiveSpec& spec) {
  if (spec.algo != Algo::kAuto) {
    std::vector<Algo> valid = AlgorithmsFor(spec.op);
    for (Algo a : HardwareAlgorithmsFor(spec.op)) valid.push_back(a);
    if (std::find(valid.begin(), valid.end(), spec.algo) == valid.end()) {
      std::string names = "auto";
      for (Algo a : valid) names += ", " + std::string(AlgoName(a));
      return Status::InvalidArgument("algorithm '" + std::string(AlgoName(spec.algo)) +
                                     "' does not implement " + std::string(OpName(spec.op)) +
                                     "; valid: " + names);
    }
  }
  if (spec.gpus.empty()) return Status::InvalidArgument("the group has no GPUs");
  if (spec.op == Op::kSendRecv && spec.gpus.size() != 2) {
    return Status::InvalidArgument("send_recv needs exactly two GPUs {src, dst}, got " +
                                   std::to_string(spec.gpus.size()));
  }
  if (spec.gpus.size() > static_cast<size_t>(topology.num_gpus())) {
    return Status::InvalidArgument("group of " + std::to_string(spec.gpus.size()) +
                                   " GPUs is larger than the cluster (" +
                                   std::to_string(topology.num_gpus()) + " GPUs)");
  }
  std::vector<int> sorted = spec.gpus;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() < 0 || sorted.back() >= topology.num_gpus()) {
    return Status::InvalidArgument("GPU id out of range: the cluster has GPUs 0.." +
                                   std::to_string(topology.num_gpus() - 1));
  }
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return Status::InvalidArgument(
        "the group lists GPU " + std::to_string(*std::adjacent_find(sorted.begin(), sorted.end())) +
        " twice");
  }
  if (spec.bytes == 0) return Status::InvalidArgument("size must be > 0 bytes");
  return Status::Ok();
}

namespace {

// A group of one GPU costs nothing: the algorithm asked for (or auto's first), Simple, zero.
CollectiveEstimate GroupOfOne(const CollectiveSpec& spec) {
  const std::vector<Algo> algos = AlgorithmsFor(spec.op);
  return CollectiveEstimate{spec.algo == Algo::kAuto ? algos.front() : spec.algo, Protocol::kSimple,
                            sim::Time::Zero()};
}

}  // namespace

Result<CollectiveEstimate> EstimateCollective(const Topology& topology,
                                              const CollectiveSpec& spec) {
  TRAINSIM_RETURN_IF_ERROR(ValidateCollective(topology, spec));
  if (spec.gpus.size() == 1) return GroupOfOne(spec);
  Result<Choice> choice = Choose(topology, spec);
  if (!choice.ok()) return choice.status();
  const auto time = sim::Time::FromSecondsChecked(choice->time_s);
  if (!time.has_value()) {
    return Status::OutOfRange(
        "collective time out of range: a link on its path is down or the size is too large");
  }
  return CollectiveEstimate{choice->algo, choice->protocol, *time};
}

Result<CollectiveEstimate> EstimateCollectiveOnNetwork(const FlowNetwork& network,
                                                       const CollectiveSpec& spec) {
  const Topology& topology = network.topology();
  TRAINSIM_RETURN_IF_ERROR(ValidateCollective(topology, spec));
  if (spec.gpus.size() == 1) return GroupOfOne(spec);
  Result<Choice> choice = Choose(topology, spec);
  if (!choice.ok()) return choice.status();
  const std::vector<double> t = EvaluateSchedule(topology, choice->schedule, {choice->protocol},
                                                 &network.LinkCapacities(), choice->routes.get());
  const auto time = sim::Time::FromSecondsChecked(t.front());
  return CollectiveEstimate{choice->algo, choice->protocol,
                            time.has_value() ? *time : sim::Time::Max()};
}

struct CollectivePlanCache::Plan {
  CollectiveEstimate estimate;
  std::shared_ptr<const PreparedSchedule> prepared;  // null: a group of one (nothing to move)
};
CollectivePlanCache::CollectivePlanCache() = default;
CollectivePlanCache::~CollectivePlanCache() = default;

Result<CollectiveEstimate> RunCollective(FlowNetwork* network, const CollectiveSpec& spec,
                                         std::function<void()> on_done) {
  return RunCollective(network, spec, std::move(on_done), nullptr);
}

namespace {
Result<CollectivePlanCache::Plan> MakePlan(const Topology& topology, const CollectiveSpec& spec) {
  TRAINSIM_RETURN_IF_ERROR(ValidateCollective(topology, spec));
  if (spec.gpus.size() == 1) return CollectivePlanCache::Plan{GroupOfOne(spec), nullptr};
  Result<Choice> choice = Choose(topology, spec);
  if (!choice.ok()) return choice.status();
  const auto time = sim::Time::FromSecondsChecked(choice->time_s);
  const CollectiveEstimate estimate{choice->algo, choice->protocol,
                                    time.has_value() ? *time : sim::Time::Max()};
  return CollectivePlanCache::Plan{
      estimate, PrepareSchedule(topology, choice->schedule, choice->protocol,
                                SegmentGrouping::kClosePipelines, std::move(choice->routes))};
}
}  // namespace

Result<const CollectivePlanCache::Plan*> PlanCollective(const Topology& topology,
                                                        const CollectiveSpec& spec,
                                                        CollectivePlanCache* cache) {
  CollectivePlanCache::Key key{int(spec.op), int(spec.algo), spec.bytes, spec.gpus};
  auto it = cache->plans.find(key);
  if (it == cache->plans.end()) {
    Result<CollectivePlanCache::Plan> plan = MakePlan(topology, spec);
    if (!plan.ok()) return plan.status();
    it = cache->plans
             .emplace(std::move(key), std::make_unique<CollectivePlanCache::Plan>(std::move(*plan)))
             .first;
  }
  return it->second.get();
}

CollectiveEstimate RunPlan(FlowNetwork* network, const CollectivePlanCache::Plan& plan,
                           std::function<void()> on_done) {
  if (plan.prepared == nullptr) {
    network->engine()->Schedule(sim::Time::Zero(), std::move(on_done));
  } else {
    RunPreparedSchedule(network, plan.prepared, std::move(on_done));
  }
  return plan.estimate;
}

CollectiveEstimate PlanEstimate(const CollectivePlanCache::Plan& plan) { return plan.estimate; }

std::optional<AloneTimeline> TimePlanAlone(const FlowNetwork& network,
                                           const CollectivePlanCache::Plan& plan,
                                           FlowNetwork* scratch) {
  if (plan.prepared == nullptr) return std::nullopt;
  std::optional<AloneTimeline> t = TimeAlone(network, plan.prepared, scratch);
  if (!t.has_value() || !t->resumable) return std::nullopt;
  return t;
}

std::vector<LinkId> PlanLinks(const CollectivePlanCache::Plan& plan) {
  if (plan.prepared == nullptr) return {};
  return ScheduleLinks(*plan.prepared);
}

void ResumePlan(FlowNetwork* network, const CollectivePlanCache::Plan& plan,
                const AloneTimeline& timeline, int64_t elapsed_ns, std::function<void()> on_done) {
  ResumePreparedSchedule(network, plan.prepared, timeline, elapsed_ns, std::move(on_done));
}

Result<CollectiveEstimate> RunCollective(FlowNetwork* network, const CollectiveSpec& spec,
                                         std::function<void()> on_done,
                                         CollectivePlanCache* cache) {
  if (cache != nullptr) {
    Result<const CollectivePlanCache::Plan*> plan =
        PlanCollective(network->topology(), spec, cache);
    if (!plan.ok()) return plan.status();
    return RunPlan(network, **plan, std::move(on_done));
  }
  Result<CollectivePlanCache::Plan> plan = MakePlan(network->topology(), spec);
  if (!plan.ok()) return plan.status();
  return RunPlan(network, *plan, std::move(on_done));
}

}  // namespace trainsim::comm
