// comm::Schedule — a collective as stages of transfers, shared by its two views.
//
// Every algorithm in comm/ describes itself as a Schedule:
//   - launches × NCCL's base latency (kernel launch and set-up), paid first;
//   - a run of synchronous stages ("waves") of data movement. A PipelinedTransfer moves
//     `payload_bytes` from one GPU to another in each of `num_waves` consecutive waves starting
//     at `first_wave` (a ring step repeated, or a pipeline chunk passing one hop). Within a wave
//     every transfer starts at the same instant and the wave ends when the last one has drained;
//     then the next wave starts. NCCL's ranks proceed step by step without a global barrier, but
//     in the symmetric rings and trees built here every rank's step drains together, so the
//     barrier gives the same bandwidth timing and keeps waves identical;
//   - the latency of the critical chain of hops, paid once: NCCL's per-hop latencies
//     (tuning.cc; end-to-end figures, so a hop costs max(NCCL hop latency, the topology's path
//     latency)) summed along the longest dependency chain (a ring's K consecutive hops, a tree's
//     leaf→root→leaf path). NCCL pipelines slices so that hop latency overlaps other slices'
//     transfers; its tuner therefore adds latencies to bytes/bandwidth rather than charging
//     latency per byte moved, and so do we.
//
// Two evaluations:
//   - EvaluateSchedule (closed form): T = launches·base + chain latency + Σ over waves of
//     wire_bytes · max over links (transfers crossing the link / its bandwidth): the wave's
//     slowest transfer drains at the smallest max-min share, which is the first level of
//     progressive filling, capacity / load of the most loaded link. Waves with the same active
//     set are computed once, so a ring is one alpha-beta term times its 2(n−1) steps. The load
//     does not depend on the protocol, so one evaluation prices every protocol.
//   - RunSchedule (expansion): the same waves as flows on a FlowNetwork (their latency is the
//     chain latency, added after the last wave, not the flows' path latency). Segments: a run of
//     consecutive waves with the same active transfers (a ring's 2(n−1) steps) starts as one
//     wave whose flows carry the run's bytes, so a ring over n ranks costs n·C flows, not
//     2(n−1)·n·C. On an idle network this is exact (each wave would last payload / r at the
//     same rate r). Under contention it lets a transfer on an uncontended link run ahead of the
//     per-step barrier, so the collective ends when its slowest transfer has moved the whole
//     run: max over transfers of the sum of their drains rather than the sum over steps of the
//     slowest drain. The two agree while contention is steady over the collective (a ring
//     that shares one NIC with a long pipeline send); NCCL's ring, throttled by the slowest
//     link through its bounded step buffers (NCCL_STEPS), lies between them.
// They agree on an idle network because all transfers of one wave carry the same bytes: the
// flows on the most loaded link are frozen first, at the smallest rate r, and keep r until they
// drain (every flow sharing that link has rate r, so none finishes earlier and frees capacity),
// so the wave ends at bytes / r in the expansion too.
//
// Invariants: every transfer of one wave has the same payload; src != dst.
#ifndef TRAINSIM_COMM_SCHEDULE_H_
#define TRAINSIM_COMM_SCHEDULE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/collective.h"
#include "comm/flow_network.h"
#include "comm/nccl_model.h"
#include "comm/topology.h"

namespace trainsim::comm {

struct PipelinedTransfer {
  int src_gpu = 0;
  int dst_gpu = 0;
  uint64_t payload_bytes = 0;  // data bytes per wave (wire bytes follow from the protocol)
  int64_t first_wave = 0;
  int64_t num_waves = 1;
};

// One hop of a latency chain: its class and the topology's physical path latency.
struct Hop {
  HopClass hop_class = HopClass::kNvlink;
  double path_latency_s = 0;
};
Hop MakeHop(const Topology& topology, int src_gpu, int dst_gpu);
// max(NCCL's hop latency for the protocol and class, the physical path latency).
double HopLatency(const ProtocolCosts& costs, const Hop& hop);

struct Schedule {
  LatencyFamily family = LatencyFamily::kRing;
  int launches = 1;  // collective launches (base latencies) — hierarchical runs three
  std::vector<PipelinedTransfer> transfers;
  // Latency of the critical chain of hops under a protocol's costs, in seconds.
  std::function<double(const ProtocolCosts&)> chain_latency_s;
  int64_t total_waves() const;
  uint64_t total_flows() const;  // Σ num_waves: an upper bound on the flows the expansion starts
};

// Closed-form time in seconds on the idle topology, one entry per protocol in `protocols`.
// With `capacity_Bps` (one entry per LinkId, e.g. FlowNetwork::LinkCapacities()) links have
// those capacities instead of the topology's; a wave crossing a link of capacity 0 never ends
// (+infinity).
std::vector<double> EvaluateSchedule(const Topology& topology, const Schedule& schedule,
                                     const std::vector<Protocol>& protocols,
                                     const std::vector<double>* capacity_Bps = nullptr);

// Runs the schedule with `protocol` on the network from now; on_done after the last wave has
// drained and the chain latency has passed.
void RunSchedule(FlowNetwork* network, const Schedule& schedule, Protocol protocol,
                 std::function<void()> on_done);

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
