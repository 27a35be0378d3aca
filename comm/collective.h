// comm collectives — what the rest of trainsim calls to time a collective over a group of GPUs.
//
// Two views of one model that agree within 1% on an idle network (tests hold them to it):
// EstimateCollective, the closed-form alpha-beta cost with no events, and RunCollective, the
// expansion into flows on a FlowNetwork, so concurrent traffic slows each other down. Algo::kAuto
// picks the fastest (algorithm, protocol), as NCCL's tuner does, and says which. The algorithms
// (one file each) and the protocol costs: collective.cc, docs/collectives.md.
//
// Units (nccl-tests' "size"): `bytes` is the buffer per rank for all-reduce and broadcast, the
// gathered buffer for reduce-scatter and all-gather (each rank owns bytes/n), each rank's send
// buffer for all-to-all (bytes/n to each peer), the message for send/recv. `gpus` is any set of
// distinct GPU ids; broadcast's root is gpus[0]; send/recv is gpus = {src, dst}.
// Invariants: deterministic; a group of one GPU costs zero time; an invalid spec is an error and
// schedules nothing; EstimateCollective never schedules events; RunCollective calls on_done once,
// through the engine, when the last rank has its data (never if a link on its path stays down).
#ifndef TRAINSIM_COMM_COLLECTIVE_H_
#define TRAINSIM_COMM_COLLECTIVE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "comm/flow_network.h"
#include "comm/topology.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::comm {

enum class Op { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kAllToAll, kSendRecv };
// kNvls: NVLink SHARP all-reduce inside an NVSwitch domain (across nodes only with IB SHARP
// reducing between them); kNvlsTree: NVLS inside each node, a double binary tree between nodes;
// kCollNet: IB SHARP all-reduce (CollNet Direct: NVLink inside the node, the switches reduce
// between nodes); kPat: NCCL's Parallel Aggregated Trees all-gather / reduce-scatter, one GPU per
// node. Each one's contract: comm/nvls.h, comm/collnet.h, comm/pat.h.
enum class Algo { kAuto, kRing, kTree, kHierarchical, kDirect, kNvls, kNvlsTree, kCollNet, kPat };
// NCCL's protocols: LL (8-byte flag per 8 bytes, lowest latency), LL128 (flag per 128-byte
// line), Simple (bulk with fences; full bandwidth, highest latency).
enum class Protocol { kLL, kLL128, kSimple };

// Names: "all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all", "send_recv";
// "auto", "ring", "tree", "hierarchical", "direct", "nvls", "nvls_tree", "collnet", "pat";
// "LL", "LL128", "Simple".
std::string_view OpName(Op op);
std::string_view AlgoName(Algo algo);
std::string_view ProtocolName(Protocol protocol);
Result<Op> ParseOp(std::string_view name);      // lists the valid names on error
Result<Algo> ParseAlgo(std::string_view name);  // lists the valid names on error

// The algorithms that implement `op` on any topology and group (kAuto excluded).
std::vector<Algo> AlgorithmsFor(Op op);
// The algorithms that implement `op` only where the hardware and the group allow it, as NCCL
// enables them: NVLS (NVSwitch 3+, topology.nvls), NVLS-tree (NVLS and more than one node),
// CollNet (topology.sharp, more than one node) for all-reduce; PAT (one GPU per node) for
// reduce-scatter and all-gather. Algo::kAuto tries these after AlgorithmsFor(op) and skips the
// ones the topology or group cannot run; asked for by name they fail with the reason.
std::vector<Algo> HardwareAlgorithmsFor(Op op);

// nccl-tests bus-bandwidth factor: all-reduce 2(n−1)/n; reduce-scatter, all-gather, all-to-all
// (n−1)/n; broadcast and send/recv 1.
double BusBandwidthFactor(Op op, int n);

struct CollectiveSpec {
  Op op = Op::kAllReduce;
  Algo algo = Algo::kAuto;
  std::vector<int> gpus;
  uint64_t bytes = 0;
};

struct CollectiveEstimate {
  Algo algo = Algo::kRing;  // never kAuto: what was used
  Protocol protocol = Protocol::kSimple;
  sim::Time time;
};

// Checks the spec against the topology: known op/algo pair, group non-empty with distinct ids
// in range (send/recv: exactly two), bytes > 0.
Status ValidateCollective(const Topology& topology, const CollectiveSpec& spec);

// Closed-form alpha-beta cost on an idle network. kAuto resolves to the fastest algorithm and
// protocol (ties: the earlier in AlgorithmsFor then HardwareAlgorithmsFor order, then LL, LL128,
// Simple).
Result<CollectiveEstimate> EstimateCollective(const Topology& topology, const CollectiveSpec& spec);

// Expands the collective into flows on `network`, starting now, and calls on_done when the last
// rank has finished. kAuto resolves exactly as EstimateCollective does (on the idle topology).
// Returns the algorithm/protocol used and the idle-network estimate; on error, nothing is
// scheduled and on_done is never called.
Result<CollectiveEstimate> RunCollective(FlowNetwork* network, const CollectiveSpec& spec,
                                         std::function<void()> on_done);

// Memo of RunCollective's plans on one topology, per (op, algo, group, bytes): the algorithm and
// protocol kAuto picks, the idle-network estimate and the schedule prepared to run. Choosing
// prices every algorithm under every protocol, and a training step starts the same few (group,
// size) pairs thousands of times. Plans depend on the topology alone (never on link factors),
// so one cache may serve every FlowNetwork over the same topology. Not thread-safe.
struct PreparedSchedule;
struct AloneTimeline;
class CollectivePlanCache {
 public:
  CollectivePlanCache();
  ~CollectivePlanCache();
  CollectivePlanCache(const CollectivePlanCache&) = delete;
  CollectivePlanCache& operator=(const CollectivePlanCache&) = delete;
  struct Plan;
  using Key = std::tuple<int, int, uint64_t, std::vector<int>>;  // op, algo, bytes, group
  std::map<Key, std::unique_ptr<const Plan>> plans;
};
// RunCollective through `cache` (the same flows and result; nullptr = no cache).
Result<CollectiveEstimate> RunCollective(FlowNetwork* network, const CollectiveSpec& spec,
                                         std::function<void()> on_done, CollectivePlanCache* cache);
// The plan RunCollective(network, spec, ·, cache) runs, made (and kept in `cache`) on first use:
// for callers that start one collective many times, to run it without looking it up again.
// Valid while the cache lives. REQUIRES: cache != nullptr.
Result<const CollectivePlanCache::Plan*> PlanCollective(const Topology& topology,
                                                        const CollectiveSpec& spec,
                                                        CollectivePlanCache* cache);
// What RunPlan returns for the plan: its algorithm, protocol and idle time.
CollectiveEstimate PlanEstimate(const CollectivePlanCache::Plan& plan);
// Runs a plan from PlanCollective on `network` (over the plan's topology): the same flows and
// result as RunCollective of its spec.
CollectiveEstimate RunPlan(FlowNetwork* network, const CollectivePlanCache::Plan& plan,
                           std::function<void()> on_done);

// Repeating a kept plan without flows while nothing else crosses its links (the step
// simulation's queued gradient buckets; schedule.h, AloneTimeline):
// its run alone on `network`'s link factors; empty for a group of one, a plan that never ends
// (a link down) or one whose run cannot be resumed part-way (AloneTimeline::resumable).
// `scratch`: as TimeAlone's.
std::optional<AloneTimeline> TimePlanAlone(const FlowNetwork& network,
                                           const CollectivePlanCache::Plan& plan,
                                           FlowNetwork* scratch = nullptr);
// The links the plan's flows cross, ascending.
std::vector<LinkId> PlanLinks(const CollectivePlanCache::Plan& plan);
// Continues a run of the plan that started `elapsed_ns` ago, alone on its links since
// (ResumePreparedSchedule). REQUIRES: `timeline` is TimePlanAlone's, 0 <= elapsed_ns <
// timeline.total_ns.
void ResumePlan(FlowNetwork* network, const CollectivePlanCache::Plan& plan,
                const AloneTimeline& timeline, int64_t elapsed_ns, std::function<void()> on_done);

// The closed form on the network's current link capacities (degraded links slow it; a link that
// is down on its path, or a time beyond sim::Time's range, gives sim::Time::Max()), for the
// algorithm and protocol RunCollective
// would pick (chosen on the idle topology). Schedules nothing. For callers that time a
// collective as one event where the flow expansion would cost too much; unlike RunCollective
// it does not contend with other traffic on the network.
Result<CollectiveEstimate> EstimateCollectiveOnNetwork(const FlowNetwork& network,
                                                       const CollectiveSpec& spec);

// The first `n` GPUs in rank order (0..n−1, tensor-parallel innermost).
std::vector<int> FirstGpus(int n);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_COLLECTIVE_H_
