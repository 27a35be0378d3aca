// How a TransferSchedule is priced and run (its contract is in schedule.h).
//
// Every algorithm in comm/ describes itself as a TransferSchedule:
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
//     max over transfers of wire_bytes · max over its links (transfers crossing / bandwidth): the
//     wave's slowest transfer drains at the smallest max-min share, which is the first level of
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
// They agree on an idle network because transfers of one wave that share a link carry the same
// wire bytes (every transfer of a ring or tree wave; NVLS's NVSwitch legs and its network legs
// differ but never share a link): the flows on the most loaded link are frozen first, at the
// smallest rate r, and keep r until they drain (every flow sharing that link has rate r, so none
// finishes earlier and frees capacity), so each transfer drains at wire / (its most loaded
// link's share) in the expansion too, and the wave ends with the slowest.

#include "comm/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <utility>

namespace trainsim::comm {

namespace {

// Wave boundaries where the active set changes.
std::vector<int64_t> Boundaries(const TransferSchedule& s) {
  std::vector<int64_t> b;
  b.reserve(s.transfers.size() * 3 + 1);
  b.push_back(0);
  for (const auto& t : s.transfers) {
    b.push_back(t.first_wave);
    b.push_back(t.first_wave + t.num_waves);
  }
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

bool ActiveAt(const PipelinedTransfer& t, int64_t wave) {
  return t.first_wave <= wave && wave < t.first_wave + t.num_waves;
}

}  // namespace

Hop MakeHop(const Topology& topology, int src_gpu, int dst_gpu) {
  return Hop{HopClassOf(topology, src_gpu, dst_gpu),
             topology.PathLatency(topology.Route(src_gpu, dst_gpu)).seconds()};
}

double HopLatency(const ProtocolCosts& costs, const Hop& hop) {
  const double nccl = hop.hop_class == HopClass::kNvlink ? costs.nvlink_hop_s : costs.network_hop_s;
  return std::max(nccl, hop.path_latency_s);
}

double MaxCyclicWindowSum(const std::vector<double>& values, int64_t k) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (n == 0 || k <= 0) return 0;
  double total = 0;
  for (double v : values) total += v;
  const int64_t turns = k / n;
  const int64_t rest = k % n;
  double best = 0;
  if (rest > 0) {
    double window = 0;
    for (int64_t i = 0; i < rest; ++i) window += values[static_cast<size_t>(i)];
    best = window;
    for (int64_t start = 1; start < n; ++start) {
      window += values[static_cast<size_t>((start + rest - 1) % n)] -
                values[static_cast<size_t>(start - 1)];
      best = std::max(best, window);
    }
  }
  return static_cast<double>(turns) * total + best;
}

void TransferPath(const Topology& topology, const PipelinedTransfer& transfer,
                  std::vector<LinkId>* out) {
  switch (transfer.leg) {
    case Leg::kGpuToGpu:
      topology.RouteInto(transfer.src_gpu, transfer.dst_gpu, out);
      return;
    case Leg::kToNvswitch:
      *out = {topology.nvlink_up(transfer.src_gpu)};
      return;
    case Leg::kFromNvswitch:
      *out = {topology.nvlink_down(transfer.dst_gpu)};
      return;
    case Leg::kToNetSwitch:
      *out = topology.NicEgressRoute(transfer.src_gpu);
      return;
    case Leg::kFromNetSwitch: {
      const int nic = topology.global_nic_of(transfer.dst_gpu);
      *out = {topology.nic_rx(nic), topology.pcie_down(transfer.dst_gpu)};
      return;
    }
  }
}

uint64_t TransferWireBytes(const Topology& topology, const TransferSchedule& schedule,
                           const PipelinedTransfer& transfer, Protocol protocol) {
  double efficiency = schedule.efficiency;
  if (transfer.leg == Leg::kToNvswitch || transfer.leg == Leg::kFromNvswitch) {
    efficiency *= topology.spec().nvls_efficiency;
  }
  const uint64_t wire = WireBytes(transfer.payload_bytes, protocol, schedule.family);
  if (efficiency >= 1.0) return wire;
  return static_cast<uint64_t>(std::ceil(static_cast<double>(wire) / efficiency));
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

int64_t TransferSchedule::total_waves() const {
  int64_t w = 0;
  for (const auto& t : transfers) w = std::max(w, t.first_wave + t.num_waves);
  return w;
}

uint64_t TransferSchedule::total_flows() const {
  uint64_t n = 0;
  for (const auto& t : transfers) n += static_cast<uint64_t>(t.num_waves);
  return n;
}

HopClass HopClassOf(const Topology& topology, int src_gpu, int dst_gpu) {
  return topology.node_of(src_gpu) == topology.node_of(dst_gpu) ? HopClass::kNvlink
                                                                : HopClass::kNetwork;
}

std::vector<std::vector<int>> SplitByNode(const Topology& topology, std::vector<int> gpus) {
  std::sort(gpus.begin(), gpus.end());
  std::vector<std::vector<int>> segments;
  for (int g : gpus) {
    if (segments.empty() || topology.node_of(segments.back().front()) != topology.node_of(g)) {
      segments.emplace_back();
    }
    segments.back().push_back(g);
  }
  return segments;
}

namespace {

std::vector<int> DistinctNics(const Topology& topology, const std::vector<int>& segment) {
  std::vector<int> nics;
  for (int g : segment) {
    const int nic = topology.nic_of(g);
    if (std::find(nics.begin(), nics.end(), nic) == nics.end()) nics.push_back(nic);
  }
  return nics;
}

}  // namespace

int ChannelCount(const Topology& topology, const std::vector<std::vector<int>>& segments) {
  if (segments.size() <= 1) return 1;
  return static_cast<int>(DistinctNics(topology, segments.front()).size());
}

std::vector<int> RingOrder(const Topology& topology, const std::vector<std::vector<int>>& segments,
                           int channel) {
  std::vector<int> order;
  for (const auto& seg : segments) {
    const std::vector<int> nics = DistinctNics(topology, seg);
    const int want = nics[static_cast<size_t>(channel) % nics.size()];
    size_t start = 0;
    while (topology.nic_of(seg[start]) != want) ++start;
    for (size_t k = 0; k < seg.size(); ++k) order.push_back(seg[(start + k) % seg.size()]);
  }
  return order;
}

int64_t PipelineChunks(uint64_t payload_bytes, uint64_t chunk_bytes, uint64_t min_chunk_bytes,
                       int64_t min_chunks, int64_t num_transfers) {
  // NCCL (enqueue.cc) halves the tree chunk while there are fewer than depth·8 chunks, down to
  // 128 KiB; we follow the same rule.
  while (chunk_bytes > min_chunk_bytes &&
         static_cast<int64_t>(CeilDiv(payload_bytes, chunk_bytes)) < min_chunks) {
    chunk_bytes /= 2;
  }
  int64_t chunks = static_cast<int64_t>(CeilDiv(payload_bytes, std::max<uint64_t>(chunk_bytes, 1)));
  chunks = std::max<int64_t>(chunks, 1);
  // Simulation budget: at most kFlowBudget flows in the expansion (documented in
  // docs/collectives.md; it only coarsens the chunking of very large pipelined collectives on
  // very large groups).
  const int64_t max_chunks =
      std::max<int64_t>(1, static_cast<int64_t>(kFlowBudget) / std::max<int64_t>(num_transfers, 1));
  return std::min(chunks, max_chunks);
}

std::vector<double> EvaluateSchedule(const Topology& topology, const TransferSchedule& schedule,
                                     const std::vector<Protocol>& protocols,
                                     const std::vector<double>* capacity_Bps) {
  const size_t np = protocols.size();
  std::vector<double> total(np, 0.0);
  for (size_t k = 0; k < np; ++k) {
    const ProtocolCosts costs = NcclCosts(schedule.family, protocols[k]);
    total[k] = schedule.launches * costs.base_s +
               (schedule.chain_latency_s ? schedule.chain_latency_s(costs) : 0.0);
  }
  if (schedule.transfers.empty()) return total;

  const size_t n = schedule.transfers.size();
  std::vector<std::vector<LinkId>> paths(n);
  // wire[i * np + k]: transfer i's wire bytes per wave under protocols[k].
  std::vector<double> wire(n * np);
  for (size_t i = 0; i < n; ++i) {
    TransferPath(topology, schedule.transfers[i], &paths[i]);
    for (size_t k = 0; k < np; ++k) {
      wire[i * np + k] = static_cast<double>(
          TransferWireBytes(topology, schedule, schedule.transfers[i], protocols[k]));
    }
  }
  std::vector<double> capacity(static_cast<size_t>(topology.num_links()));
  for (size_t l = 0; l < capacity.size(); ++l) {
    capacity[l] = capacity_Bps != nullptr && l < capacity_Bps->size()
                      ? (*capacity_Bps)[l]
                      : topology.link(static_cast<LinkId>(l)).bandwidth_Bps;
  }
  const std::vector<int64_t> bounds = Boundaries(schedule);
  const int64_t end_wave = schedule.total_waves();
  std::vector<int32_t> load(capacity.size(), 0);
  std::vector<LinkId> touched;
  std::vector<size_t> active;
  std::vector<double> drain(np);
  for (size_t b = 0; b < bounds.size() && bounds[b] < end_wave; ++b) {
    const int64_t wave = bounds[b];
    const int64_t next = b + 1 < bounds.size() ? std::min(bounds[b + 1], end_wave) : end_wave;
    active.clear();
    for (size_t i = 0; i < n; ++i) {
      if (ActiveAt(schedule.transfers[i], wave)) active.push_back(i);
    }
    if (active.empty()) continue;
    // Transfers of a wave that share a link carry the same wire bytes, so the flows of the most
    // loaded link (capacity / transfers crossing it) are frozen first by progressive filling and
    // drain last among those they share links with; each transfer therefore drains at
    // wire / (min over its links of capacity / load), and the wave lasts as long as the slowest.
    touched.clear();
    for (size_t i : active) {
      for (LinkId l : paths[i]) {
        if (load[static_cast<size_t>(l)]++ == 0) touched.push_back(l);
      }
    }
    std::fill(drain.begin(), drain.end(), 0.0);
    for (size_t i : active) {
      double rate = std::numeric_limits<double>::infinity();
      for (LinkId l : paths[i]) {
        const size_t li = static_cast<size_t>(l);
        rate = std::min(rate, capacity[li] / load[li]);
      }
      for (size_t k = 0; k < np; ++k) {
        const double d =
            rate > 0 ? wire[i * np + k] / rate : std::numeric_limits<double>::infinity();
        drain[k] = std::max(drain[k], d);
      }
    }
    for (LinkId l : touched) load[static_cast<size_t>(l)] = 0;
    for (size_t k = 0; k < np; ++k) total[k] += static_cast<double>(next - wave) * drain[k];
  }
  return total;
}

namespace {

// A segment's transfers with the same flow_class >= 0 and wire bytes, two or more, become one
// class of flows (in order of their first transfer); the others run one flow each.
void GroupClasses(const TransferSchedule& schedule, const PreparedSchedule& p,
                  PreparedSchedule::Segment* seg) {
  std::map<std::pair<int, uint64_t>, std::vector<uint32_t>> groups;
  std::vector<std::pair<int, uint64_t>> order;
  for (uint32_t i : seg->transfers) {
    const int tag = schedule.transfers[i].flow_class;
    if (tag < 0 || p.paths[i].empty()) continue;
    auto [it, fresh] = groups.try_emplace({tag, p.wire_bytes[i]});
    if (fresh) order.push_back(it->first);
    it->second.push_back(i);
  }
  std::vector<uint8_t> in_class(schedule.transfers.size(), 0);
  std::vector<std::span<const LinkId>> members;
  for (const auto& key : order) {
    const std::vector<uint32_t>& idx = groups[key];
    if (idx.size() < 2) continue;
    members.clear();
    for (uint32_t i : idx) {
      members.emplace_back(p.paths[i]);
      in_class[i] = 1;
    }
    seg->classes.push_back({MakeFlowClass(members), key.second});
  }
  if (seg->classes.empty()) return;
  for (uint32_t i : seg->transfers) {
    if (!in_class[i]) seg->singles.push_back(i);
  }
}

}  // namespace

std::shared_ptr<const PreparedSchedule> PrepareSchedule(const Topology& topology,
                                                        const TransferSchedule& schedule,
                                                        Protocol protocol) {
  auto p = std::make_shared<PreparedSchedule>();
  const ProtocolCosts costs = NcclCosts(schedule.family, protocol);
  p->base_latency = sim::Time::FromSeconds(schedule.launches * costs.base_s);
  p->chain_latency =
      sim::Time::FromSeconds(schedule.chain_latency_s ? schedule.chain_latency_s(costs) : 0.0);
  const size_t n = schedule.transfers.size();
  p->paths.resize(n);
  p->wire_bytes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TransferPath(topology, schedule.transfers[i], &p->paths[i]);
    p->wire_bytes[i] = TransferWireBytes(topology, schedule, schedule.transfers[i], protocol);
  }
  // Segments: the waves between consecutive boundaries share one active set.
  const std::vector<int64_t> bounds = Boundaries(schedule);
  const int64_t end_wave = schedule.total_waves();
  for (size_t b = 0; b < bounds.size() && bounds[b] < end_wave; ++b) {
    const int64_t wave = bounds[b];
    const int64_t next = b + 1 < bounds.size() ? std::min(bounds[b + 1], end_wave) : end_wave;
    PreparedSchedule::Segment seg;
    seg.waves = next - wave;
    for (size_t i = 0; i < n; ++i) {
      if (ActiveAt(schedule.transfers[i], wave)) seg.transfers.push_back(static_cast<uint32_t>(i));
    }
    if (!seg.transfers.empty()) p->segments.push_back(std::move(seg));
  }
  for (auto& seg : p->segments) GroupClasses(schedule, *p, &seg);
  return p;
}

namespace {

// The expansion's state; owns itself and is deleted after on_done.
class ScheduleRun {
 public:
  ScheduleRun(FlowNetwork* network, std::shared_ptr<const PreparedSchedule> prepared,
              std::function<void()> on_done)
      : network_(network), p_(std::move(prepared)), on_done_(std::move(on_done)) {}

  void Start() { StartSegment(); }

 private:
  // Runs the next segment as one wave whose flows carry the segment's bytes (see schedule.h,
  // "segments").
  void StartSegment() {
    if (segment_ >= p_->segments.size()) {
      auto done = std::move(on_done_);
      const sim::Time latency = p_->chain_latency;
      sim::Engine* engine = network_->engine();
      delete this;
      engine->Schedule(latency, [done = std::move(done)] {
        if (done) done();
      });
      return;
    }
    const PreparedSchedule::Segment& seg = p_->segments[segment_];
    const std::vector<uint32_t>& singles = seg.classes.empty() ? seg.transfers : seg.singles;
    pending_ = singles.size() + seg.classes.size();
    const uint64_t n = static_cast<uint64_t>(seg.waves);
    // Saturating: a segment's bytes cannot wrap (kMaxBytes keeps them far below 2^64 today).
    auto bytes = [n](uint64_t wire) {
      return wire > std::numeric_limits<uint64_t>::max() / n ? std::numeric_limits<uint64_t>::max()
                                                             : wire * n;
    };
    // The chain latency stands for every hop's latency, so flows add none of their own.
    for (const auto& c : seg.classes) {
      network_->StartFlowClass(c.members, bytes(c.wire_bytes), [this] { OnDelivered(); });
    }
    for (uint32_t i : singles) {
      network_->StartFlow(
          std::span<const LinkId>(p_->paths[i]), bytes(p_->wire_bytes[i]),
          [this] { OnDelivered(); }, sim::Time::Zero(), /*charge_path_latency=*/false);
    }
  }

  void OnDelivered() {
    if (--pending_ > 0) return;
    ++segment_;
    StartSegment();
  }

  FlowNetwork* network_;
  std::shared_ptr<const PreparedSchedule> p_;
  std::function<void()> on_done_;
  size_t segment_ = 0;
  size_t pending_ = 0;
};

}  // namespace

void RunSchedule(FlowNetwork* network, const TransferSchedule& schedule, Protocol protocol,
                 std::function<void()> on_done) {
  RunPreparedSchedule(network, PrepareSchedule(network->topology(), schedule, protocol),
                      std::move(on_done));
}

void RunPreparedSchedule(FlowNetwork* network, std::shared_ptr<const PreparedSchedule> prepared,
                         std::function<void()> on_done) {
  const sim::Time base = prepared->base_latency;
  auto* run = new ScheduleRun(network, std::move(prepared), std::move(on_done));
  network->engine()->Schedule(base, [run] { run->Start(); });
}

}  // namespace trainsim::comm
