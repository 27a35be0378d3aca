// comm::TransferSchedule — a collective as stages ("waves") of transfers, shared by its two views.
//
// Every algorithm in comm/ describes itself as a TransferSchedule: `launches` × NCCL's base
// latency, then synchronous waves of PipelinedTransfers (all transfers of a wave start together and
// the wave ends when the last has drained), then the latency of the critical chain of hops, paid
// once. EvaluateSchedule prices it in closed form without events (one evaluation prices every
// protocol); RunSchedule expands it into flows on a FlowNetwork. The two agree on an idle
// network; why, and how they differ under changing contention: schedule.cc, docs/collectives.md.
//
// Units: bytes and seconds. Deterministic: the same inputs give the same result.
// Invariants: transfers of one wave that share a link have the same wire bytes (the same
// payload and leg kind); src != dst for GPU-to-GPU legs.
//
// Legs: most transfers go GPU to GPU along Topology::Route. In-switch reductions (NVLink SHARP,
// IB SHARP) have one-sided legs: a GPU to the switch that reduces or multicasts, or back
// (Topology::SwitchRoute); NVSwitch legs carry payload / nvls_efficiency on the wire.
#ifndef TRAINSIM_COMM_SCHEDULE_H_
#define TRAINSIM_COMM_SCHEDULE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "comm/collective.h"
#include "comm/flow_network.h"
#include "comm/nccl_model.h"
#include "comm/topology.h"

namespace trainsim::comm {

enum class Leg {
  kGpuToGpu,       // Topology::Route(src_gpu, dst_gpu)
  kToNvswitch,     // src_gpu's NVLink up to the NVSwitch (NVLS reduce / multicast store)
  kFromNvswitch,   // NVSwitch down to dst_gpu (NVLS reduced result / multicast copy)
  kToNetSwitch,    // src_gpu's PCIe and NIC up to its leaf switch (IB SHARP aggregation)
  kFromNetSwitch,  // leaf switch down through dst_gpu's NIC and PCIe (SHARP result)
};

struct PipelinedTransfer {
  int src_gpu = 0;  // for kFrom* legs: the same as dst_gpu
  int dst_gpu = 0;  // for kTo* legs: the same as src_gpu
  Leg leg = Leg::kGpuToGpu;
  uint64_t payload_bytes = 0;  // data bytes per wave (wire bytes follow from the protocol)
  int64_t first_wave = 0;
  int64_t num_waves = 1;
  // Flow class (max_min.h): transfers of one segment with the same flow_class >= 0 and the same
  // wire bytes start as one class of flows, solved as one unknown while their rates agree. Set
  // it only on transfers symmetric by construction (a ring's network legs, one per rank and
  // channel); -1 = a flow of its own (the default, exact and slower at scale).
  int flow_class = -1;
};

// One hop of a latency chain: its class and the topology's physical path latency.
struct Hop {
  HopClass hop_class = HopClass::kNvlink;
  double path_latency_s = 0;
};
Hop MakeHop(const Topology& topology, int src_gpu, int dst_gpu);
// max(NCCL's hop latency for the protocol and class, the physical path latency).
double HopLatency(const ProtocolCosts& costs, const Hop& hop);

struct TransferSchedule {
  LatencyFamily family = LatencyFamily::kRing;
  int launches = 1;  // collective launches (base latencies) — hierarchical runs three
  // Fraction of the links' bandwidth the algorithm's data gets beyond the protocol's factor
  // (PAT: tuning.cc's 0.75); every transfer's wire bytes are divided by it.
  double efficiency = 1.0;
  // LL's wire bytes are multiplied by this: NCCL's LL bandwidth ceiling where it binds
  // (TopologySpec::ll_max_*; set by comm's tuner for Ring and Tree, 1 elsewhere).
  double ll_wire_scale = 1.0;
  std::vector<PipelinedTransfer> transfers;
  // Latency of the critical chain of hops under a protocol's costs, in seconds.
  std::function<double(const ProtocolCosts&)> chain_latency_s;
  int64_t total_waves() const;
  uint64_t total_flows() const;  // Σ num_waves: an upper bound on the flows the expansion starts
};

struct ScheduleRoutes;  // RouteSchedule, below

// Closed-form time in seconds on the idle topology, one entry per protocol in `protocols`.
// With `capacity_Bps` (one entry per LinkId, e.g. FlowNetwork::LinkCapacities()) links have
// those capacities instead of the topology's; a wave crossing a link of capacity 0 never ends
// (+infinity).
// `routes`: the schedule's transfers routed by RouteSchedule, or null to route them here.
std::vector<double> EvaluateSchedule(const Topology& topology, const TransferSchedule& schedule,
                                     const std::vector<Protocol>& protocols,
                                     const std::vector<double>* capacity_Bps = nullptr,
                                     const ScheduleRoutes* routes = nullptr);

// A schedule's transfers routed once, for EvaluateSchedule and PrepareSchedule, which otherwise
// route every transfer each (a collective's choice evaluates every protocol, then LL again under
// its ceiling, and prepares the winner: three routings of up to 131 k transfers for a tree over
// 4,096 GPUs). Valid for the transfers' endpoints and legs on the topology it was made on,
// whatever their wire bytes and the capacities evaluated under.
std::shared_ptr<ScheduleRoutes> RouteSchedule(const Topology& topology,
                                              const TransferSchedule& schedule);

// Runs the schedule with `protocol` on the network from now; on_done after the last wave has
// drained and the chain latency has passed.
void RunSchedule(FlowNetwork* network, const TransferSchedule& schedule, Protocol protocol,
                 std::function<void()> on_done);

// A schedule made ready to run under one protocol on one topology: its segments (runs of waves
// with the same active transfers), the transfers' paths and wire bytes, the base and chain
// latencies. Immutable, so one preparation serves every run of the same collective (the step
// simulation's buckets repeat a handful of (group, size) pairs thousands of times).
struct PreparedSchedule {
  struct Segment {
    int64_t waves = 1;                // waves in the segment
    std::vector<uint32_t> transfers;  // indices of the active transfers
    // A closed run (scale > 0; see "Closing" below): each transfer's flow carries
    // wire_bytes × scale, scale = the run's idle time / the idle time of one wave of all the
    // run's transfers at once. Otherwise wire_bytes × waves.
    double scale = 0;
    // The transfers declared in classes (PipelinedTransfer::flow_class), grouped, and the rest
    // (`singles`). With no classes every transfer of `transfers` runs as a flow of its own.
    struct ClassRun {
      std::shared_ptr<const FlowClass> members;
      uint64_t wire_bytes = 0;
    };
    std::vector<ClassRun> classes;
    std::vector<uint32_t> singles;
  };
  std::vector<Segment> segments;  // in wave order; empty waves dropped (they cost nothing)
  // Transfer i's path: path_links[path_begin[i] .. path_begin[i + 1]).
  std::vector<LinkId> path_links;
  std::vector<uint32_t> path_begin;
  std::span<const LinkId> Path(size_t i) const {
    return {path_links.data() + path_begin[i], path_begin[i + 1] - path_begin[i]};
  }
  std::vector<uint64_t> wire_bytes;  // per transfer and wave
  sim::Time base_latency;            // launches × NCCL's base latency
  sim::Time chain_latency;
};
//
// Closing (SegmentGrouping::kClosePipelines, the default): a pipeline's fill and drain change the
// active transfers every wave, so each of their waves would be a segment of its own and a
// pipelined tree over n GPUs would start ~(P + depth)·4n flows for P chunks. A run of two or
// more consecutive one-wave segments is instead "closed" into one segment whose flows start
// together, every transfer active in the run once, each carrying its wire bytes × s, with
// s = (the run's idle closed-form time) / (the idle time of one wave of all of them at once).
// Exact on an idle network (the same progressive-filling argument as for a wave: transfers that
// share a link carry the same bytes, so each drains at its most loaded link's share and the
// slowest ends at s × that wave's time = the run's time); runs where transfers of different
// wire bytes would share a link, or where closing would start no fewer flows, stay per segment.
// Under contention it differs from the per-wave expansion: every transfer of the run is exposed
// to other traffic for the whole run (with bytes scaled to the run's idle time) instead of only
// during its own waves, so a competitor on a link that only some waves use slows the whole run
// in proportion to its share there. Both lie between the idle time T and T / φ when every link
// keeps at least a fraction φ of its idle share (tests/comm/pipeline_grouping_test.cc).
// s is computed on the idle topology, so a run whose bottleneck link differs from wave to wave
// is timed from the same s on a degraded network (within the same [T, T/φ] bound).
enum class SegmentGrouping {
  kSegments,        // every segment as one wave (a run of waves with the same active transfers)
  kClosePipelines,  // and each run of one-wave segments closed into one (above)
};
std::shared_ptr<const PreparedSchedule> PrepareSchedule(
    const Topology& topology, const TransferSchedule& schedule, Protocol protocol,
    SegmentGrouping grouping = SegmentGrouping::kClosePipelines,
    // RouteSchedule's routes of `schedule`, or null; where this is their only owner, their
    // paths move into the prepared schedule.
    std::shared_ptr<ScheduleRoutes> routes = nullptr);
// RunSchedule with a prepared schedule (the same events and flows).
void RunPreparedSchedule(FlowNetwork* network, std::shared_ptr<const PreparedSchedule> prepared,
                         std::function<void()> on_done);

// A prepared schedule's run alone on a network, in ns from RunPreparedSchedule: when each
// segment starts; for each of its flows (its classes, then its singles, in order) when it drains
// and its rate between the segment's rate changes (max-min rates are constant between them); and
// when on_done runs. With it, the bytes every flow has still to move at any instant of the run
// are known, which is all a run's state is (ResumePreparedSchedule).
struct AloneTimeline {
  int64_t base_ns = 0;
  std::vector<int64_t> segment_start_ns;
  std::vector<std::vector<int64_t>> drain_ns;
  // Per segment: the instants its rates may change (its start and its flows' drains) and, for
  // each of them, every flow's rate in bytes/s from then to the next ([i * flows + flow]; 0
  // once drained).
  std::vector<std::vector<int64_t>> change_ns;
  std::vector<std::vector<double>> rate_Bps;
  int64_t total_ns = 0;
  // No class split in its members' progress (a class resumes as one byte count).
  bool resumable = false;

  // Segment `segment`'s flow `flow` has `bytes` to move in all: what is left `elapsed_ns` into
  // the run (REQUIRES: the segment has started by then).
  double BytesLeft(size_t segment, size_t flow, double bytes, int64_t elapsed_ns) const;
};
// The links the schedule's transfers cross, ascending, each once.
std::vector<LinkId> ScheduleLinks(const PreparedSchedule& prepared);
// The schedule run alone with `network`'s topology and link factors (nothing of `network`
// changes), on a private engine and network, or on `scratch` when given: an idle network over
// the same topology with every link at full bandwidth, left so (a caller timing many schedules
// saves building one per call: O(links)). Empty when it never ends (a link on its path down).
std::optional<AloneTimeline> TimeAlone(const FlowNetwork& network,
                                       std::shared_ptr<const PreparedSchedule> prepared,
                                       FlowNetwork* scratch = nullptr);
// Continues, from now, a run of `prepared` that started `elapsed_ns` ago and has been alone on
// its links since: waits out what is left of the base latency, or starts the running segment's
// flows with the bytes they have still to move, or waits out the chain latency; then runs as
// RunPreparedSchedule would. From the instant it is called the run shares its links as any
// other. REQUIRES: `timeline` is TimeAlone's for this schedule and network, resumable, and
// 0 <= elapsed_ns < total_ns.
void ResumePreparedSchedule(FlowNetwork* network, std::shared_ptr<const PreparedSchedule> prepared,
                            const AloneTimeline& timeline, int64_t elapsed_ns,
                            std::function<void()> on_done);

// The links a transfer crosses (by its leg), into *out (cleared first).
void TransferPath(const Topology& topology, const PipelinedTransfer& transfer,
                  std::vector<LinkId>* out);
// Wire bytes of one wave of `transfer` under `protocol`: the protocol's WireBytes, divided by the
// schedule's efficiency and, for NVSwitch legs, by the topology's nvls_efficiency.
uint64_t TransferWireBytes(const Topology& topology, const TransferSchedule& schedule,
                           const PipelinedTransfer& transfer, Protocol protocol);

// Helpers the algorithms share.
HopClass HopClassOf(const Topology& topology, int src_gpu, int dst_gpu);

// The group split by node, in node order, each node's GPUs sorted.
std::vector<std::vector<int>> SplitByNode(const Topology& topology, std::vector<int> gpus);

// Channels a ring or tree over these segments uses: 1 inside a node; across nodes, the number
// of distinct NICs the first node's GPUs use (NCCL builds one ring per NIC so each crosses
// nodes on its own rail).
int ChannelCount(const Topology& topology, const std::vector<std::vector<int>>& segments);

// Ring order for channel c: segments in node order, each rotated so it starts at its GPU on
// the c-th distinct NIC of that node (the GPU that receives from the network for channel c).
std::vector<int> RingOrder(const Topology& topology, const std::vector<std::vector<int>>& segments,
                           int channel);

// The largest sum of `k` consecutive entries of the cyclic sequence `values` (k may exceed its
// length: whole turns are added).
double MaxCyclicWindowSum(const std::vector<double>& values, int64_t k);

// Pipeline chunk count: payload split into chunks of `chunk_bytes`, halved down to
// `min_chunk_bytes` while there are fewer than `min_chunks`, and capped so the expansion starts
// at most kFlowBudget flows (each of `num_transfers` pipelined transfers runs once per chunk).
int64_t PipelineChunks(uint64_t payload_bytes, uint64_t chunk_bytes, uint64_t min_chunk_bytes,
                       int64_t min_chunks, int64_t num_transfers);
inline constexpr uint64_t kFlowBudget = uint64_t{1} << 22;

uint64_t CeilDiv(uint64_t a, uint64_t b);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_SCHEDULE_H_
