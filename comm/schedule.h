// comm::Schedule — a collective as stages of transfers, shared by its two views.
//
// Every algorithm in comm/ describes itself as a Schedule: a base (launch) latency, then a run
// of synchronous stages ("waves"). A PipelinedTransfer moves `wire_bytes` from one GPU to another
// in each of `num_waves` consecutive waves starting at `first_wave` (a ring step repeated, or a
// pipeline chunk passing one hop). Within a wave every transfer starts at the same instant and
// the wave ends when the last one is delivered; the next wave then starts (NCCL's ranks proceed
// step by step; with the symmetric rings and trees built here every rank's step ends together,
// so a barrier per step gives the same timing and keeps waves identical).
//
// Two evaluations:
//   - EvaluateSchedule (closed form): T = base + Σ over waves of max over its transfers of
//     (hop latency + wire_bytes / r), r the transfer's max-min fair share of the idle links with
//     every transfer of the wave present. Waves with the same active set are computed once, so a
//     ring costs one alpha-beta term times its 2(n−1) steps.
//   - RunSchedule (expansion): the same waves as flows on a FlowNetwork.
// They agree on an idle network because all transfers of one wave carry the same bytes: a flow
// frozen at rate r by progressive filling keeps r until it drains (flows sharing its bottleneck
// have rates ≤ r and so finish no earlier), so each drains at bytes / r.
//
// hop latency: NCCL's per-hop latency for the protocol and link class (tuning.cc), which is an
// end-to-end figure; the expansion adds max(0, hop latency − path latency) on top of the
// topology's physical path latency so the two views charge the same.
#ifndef TRAINSIM_COMM_SCHEDULE_H_
#define TRAINSIM_COMM_SCHEDULE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/flow_network.h"
#include "comm/topology.h"
#include "sim/time.h"

namespace trainsim::comm {

struct PipelinedTransfer {
  int src_gpu = 0;
  int dst_gpu = 0;
  uint64_t wire_bytes = 0;   // bytes on the wire per wave (protocol overhead included)
  double hop_latency_s = 0;  // NCCL per-hop latency (end-to-end, includes the path latency)
  int64_t first_wave = 0;
  int64_t num_waves = 1;
};

struct Schedule {
  double base_latency_s = 0;
  std::vector<PipelinedTransfer> transfers;
  int64_t total_waves() const;
};

// Closed-form time of the schedule on the idle topology, in seconds.
double EvaluateSchedule(const Topology& topology, const Schedule& schedule);

// Runs the schedule on the network from now; on_done when the last wave is delivered.
void RunSchedule(FlowNetwork* network, Schedule schedule, std::function<void()> on_done);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_SCHEDULE_H_
