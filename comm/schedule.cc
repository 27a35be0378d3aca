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

namespace {

// Link loads under a set of active transfers, added and removed one at a time as a sweep over the
// wave boundaries passes each transfer's first and last wave, and the drain time of one wave
// under them. A transfer's "wire class" indexes its wire bytes under each protocol; a link
// usually carries one class (transfers of a wave that share a link have the same wire bytes).
class LinkLoads {
 public:
  // capacity[l]: bytes/s of link l; class_wire[c * np + k]: wire bytes of class c under
  // protocol k. Both must outlive the LinkLoads.
  LinkLoads(const std::vector<double>* capacity, const std::vector<double>* class_wire, size_t np)
      : capacity_(capacity), class_wire_(class_wire), np_(np), links_(capacity->size()) {}

  void Add(const std::vector<LinkId>& path, uint32_t cls) {
    for (LinkId id : path) {
      Link& l = links_[static_cast<size_t>(id)];
      if (l.load++ == 0 && !l.listed) {
        l.listed = true;
        loaded_.push_back(id);
      }
      if (l.first_count == 0 || l.first == cls) {  // first_count == 0: no class yet, `more` empty
        l.first = cls;
        ++l.first_count;
        continue;
      }
      auto it = std::find_if(l.more.begin(), l.more.end(),
                             [cls](const auto& m) { return m.first == cls; });
      if (it != l.more.end()) {
        ++it->second;
      } else {
        l.more.emplace_back(cls, 1);
      }
    }
  }

  void Remove(const std::vector<LinkId>& path, uint32_t cls) {
    for (LinkId id : path) {
      Link& l = links_[static_cast<size_t>(id)];
      --l.load;
      if (l.first_count > 0 && l.first == cls) {
        if (--l.first_count == 0 && !l.more.empty()) {
          l.first = l.more.back().first;
          l.first_count = l.more.back().second;
          l.more.pop_back();
        }
        continue;
      }
      auto it = std::find_if(l.more.begin(), l.more.end(),
                             [cls](const auto& m) { return m.first == cls; });
      if (--it->second == 0) l.more.erase(it);
    }
  }

  // One wave's drain under each protocol, into out[0..np): the slowest active transfer's
  // wire / (min over its links of capacity / load). Written as the max over loaded links of
  // (each class crossing it) wire / (capacity / load): the same quotients (division rounds
  // monotonically), so the same value to the last bit, in time linear in the loaded links
  // instead of in the active transfers' path lengths.
  void Drain(double* out) {
    std::fill(out, out + np_, 0.0);
    size_t keep = 0;
    for (LinkId id : loaded_) {
      Link& l = links_[static_cast<size_t>(id)];
      if (l.load == 0) {
        l.listed = false;
        continue;
      }
      loaded_[keep++] = id;
      const double rate = (*capacity_)[static_cast<size_t>(id)] / l.load;
      DrainClass(l.first, rate, out);
      for (const auto& m : l.more) DrainClass(m.first, rate, out);
    }
    loaded_.resize(keep);
  }

  // Whether every loaded link carries transfers of one wire class only.
  bool Uniform() const {
    for (LinkId id : loaded_) {
      if (!links_[static_cast<size_t>(id)].more.empty()) return false;
    }
    return true;
  }

 private:
  struct Link {
    int32_t load = 0;
    uint32_t first = 0;       // one class crossing the link
    int32_t first_count = 0;  // its transfers (0: no class; then `more` is empty)
    bool listed = false;      // in loaded_
    std::vector<std::pair<uint32_t, int32_t>> more;  // other classes and their counts
  };

  void DrainClass(uint32_t cls, double rate, double* out) const {
    for (size_t k = 0; k < np_; ++k) {
      const double d =
          rate > 0 ? (*class_wire_)[cls * np_ + k] / rate : std::numeric_limits<double>::infinity();
      out[k] = std::max(out[k], d);
    }
  }

  const std::vector<double>* capacity_;
  const std::vector<double>* class_wire_;
  size_t np_;
  std::vector<Link> links_;
  std::vector<LinkId> loaded_;
};

// Wire classes of the transfers: distinct rows of wire[i * np .. i * np + np), in first-seen
// order; *class_wire gets the rows, the result each transfer's class.
std::vector<uint32_t> WireClasses(const std::vector<double>& wire, size_t np,
                                  std::vector<double>* class_wire) {
  const size_t n = np == 0 ? 0 : wire.size() / np;
  std::vector<uint32_t> cls(n);
  std::map<std::vector<double>, uint32_t> index;
  std::vector<double> row(np);
  class_wire->clear();
  for (size_t i = 0; i < n; ++i) {
    const auto begin = wire.begin() + static_cast<std::ptrdiff_t>(i * np);
    if (i > 0 && std::equal(begin, begin + static_cast<std::ptrdiff_t>(np),
                            wire.begin() + static_cast<std::ptrdiff_t>((i - 1) * np))) {
      cls[i] = cls[i - 1];  // fast path: algorithms emit runs of equal transfers
      continue;
    }
    row.assign(begin, begin + static_cast<std::ptrdiff_t>(np));
    auto [it, added] = index.emplace(row, static_cast<uint32_t>(index.size()));
    if (added) class_wire->insert(class_wire->end(), row.begin(), row.end());
    cls[i] = it->second;
  }
  return cls;
}

// Visits the segments in wave order: visit(wave, next, active) with `loads` holding the
// `active` transfers of waves [wave, next). Each transfer is added and removed once.
template <typename Visit>
void SweepSegments(const TransferSchedule& s, const std::vector<std::vector<LinkId>>& paths,
                   const std::vector<uint32_t>& cls, LinkLoads* loads, Visit visit) {
  std::vector<uint32_t> by_start;
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    if (s.transfers[i].num_waves >= 1) by_start.push_back(static_cast<uint32_t>(i));
  }
  std::vector<uint32_t> by_end = by_start;
  const auto& t = s.transfers;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&t](uint32_t a, uint32_t b) { return t[a].first_wave < t[b].first_wave; });
  std::stable_sort(by_end.begin(), by_end.end(), [&t](uint32_t a, uint32_t b) {
    return t[a].first_wave + t[a].num_waves < t[b].first_wave + t[b].num_waves;
  });
  const std::vector<int64_t> bounds = Boundaries(s);
  const int64_t end_wave = s.total_waves();
  size_t started = 0, ended = 0;
  for (size_t b = 0; b < bounds.size() && bounds[b] < end_wave; ++b) {
    const int64_t wave = bounds[b];
    const int64_t next = b + 1 < bounds.size() ? std::min(bounds[b + 1], end_wave) : end_wave;
    for (; started < by_start.size() && t[by_start[started]].first_wave <= wave; ++started) {
      loads->Add(paths[by_start[started]], cls[by_start[started]]);
    }
    for (;
         ended < by_end.size() && t[by_end[ended]].first_wave + t[by_end[ended]].num_waves <= wave;
         ++ended) {
      loads->Remove(paths[by_end[ended]], cls[by_end[ended]]);
    }
    visit(wave, next, started - ended);
  }
}

std::vector<double> Capacities(const Topology& topology, const std::vector<double>* capacity_Bps) {
  std::vector<double> capacity(static_cast<size_t>(topology.num_links()));
  for (size_t l = 0; l < capacity.size(); ++l) {
    capacity[l] = capacity_Bps != nullptr && l < capacity_Bps->size()
                      ? (*capacity_Bps)[l]
                      : topology.link(static_cast<LinkId>(l)).bandwidth_Bps;
  }
  return capacity;
}

}  // namespace

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
  if (schedule.transfers.empty() || np == 0) return total;

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
  const std::vector<double> capacity = Capacities(topology, capacity_Bps);
  std::vector<double> class_wire;
  const std::vector<uint32_t> cls = WireClasses(wire, np, &class_wire);
  // Transfers of a wave that share a link carry the same wire bytes, so the flows of the most
  // loaded link (capacity / transfers crossing it) are frozen first by progressive filling and
  // drain last among those they share links with; each transfer therefore drains at
  // wire / (min over its links of capacity / load), and the wave lasts as long as the slowest.
  LinkLoads loads(&capacity, &class_wire, np);
  std::vector<double> drain(np);
  SweepSegments(schedule, paths, cls, &loads, [&](int64_t wave, int64_t next, size_t active) {
    if (active == 0) return;
    loads.Drain(drain.data());
    for (size_t k = 0; k < np; ++k) total[k] += static_cast<double>(next - wave) * drain[k];
  });
  return total;
}

namespace {

// One segment of the sweep, before grouping.
struct RawSegment {
  int64_t wave = 0, next = 0;
  size_t active = 0;
  double drain_s = 0;  // one wave's idle drain (kClosePipelines only)
};

// The run raw[a..b) of one-wave segments closed into one segment (schedule.cc, "closing"), or
// false where closing it would not be exact on an idle network or would start no fewer flows.
bool CloseRun(const TransferSchedule& schedule, const PreparedSchedule& p,
              const std::vector<RawSegment>& raw, size_t a, size_t b,
              const std::vector<double>& capacity, PreparedSchedule::Segment* out) {
  const int64_t first = raw[a].wave, stop = raw[b - 1].next;
  std::vector<uint32_t> run;
  for (size_t i = 0; i < schedule.transfers.size(); ++i) {
    const PipelinedTransfer& t = schedule.transfers[i];
    if (t.num_waves >= 1 && t.first_wave < stop && t.first_wave + t.num_waves > first) {
      run.push_back(static_cast<uint32_t>(i));
    }
  }
  size_t flows = 0;
  double idle_s = 0;
  for (size_t j = a; j < b; ++j) {
    flows += raw[j].active;
    idle_s += raw[j].drain_s;
  }
  if (flows <= run.size() || !std::isfinite(idle_s)) return false;
  std::vector<double> wire(run.size());
  for (size_t j = 0; j < run.size(); ++j) wire[j] = static_cast<double>(p.wire_bytes[run[j]]);
  std::vector<double> class_wire;
  const std::vector<uint32_t> cls = WireClasses(wire, 1, &class_wire);
  LinkLoads loads(&capacity, &class_wire, 1);
  for (size_t j = 0; j < run.size(); ++j) loads.Add(p.paths[run[j]], cls[j]);
  double together_s = 0;
  loads.Drain(&together_s);
  // Exact only where transfers sharing a link carry the same bytes (as within a wave).
  if (!loads.Uniform() || !(together_s > 0) || !std::isfinite(together_s)) return false;
  out->waves = stop - first;
  out->scale = idle_s / together_s;
  out->transfers = std::move(run);
  return true;
}

}  // namespace

std::shared_ptr<const PreparedSchedule> PrepareSchedule(const Topology& topology,
                                                        const TransferSchedule& schedule,
                                                        Protocol protocol,
                                                        SegmentGrouping grouping) {
  auto p = std::make_shared<PreparedSchedule>();
  const ProtocolCosts costs = NcclCosts(schedule.family, protocol);
  p->base_latency = sim::Time::FromSeconds(schedule.launches * costs.base_s);
  p->chain_latency =
      sim::Time::FromSeconds(schedule.chain_latency_s ? schedule.chain_latency_s(costs) : 0.0);
  const size_t n = schedule.transfers.size();
  p->paths.resize(n);
  p->wire_bytes.resize(n);
  std::vector<double> wire(n);
  for (size_t i = 0; i < n; ++i) {
    TransferPath(topology, schedule.transfers[i], &p->paths[i]);
    p->wire_bytes[i] = TransferWireBytes(topology, schedule, schedule.transfers[i], protocol);
    wire[i] = static_cast<double>(p->wire_bytes[i]);
  }
  // Segments: the waves between consecutive boundaries share one active set.
  const bool close = grouping == SegmentGrouping::kClosePipelines;
  const std::vector<double> capacity = Capacities(topology, nullptr);
  std::vector<double> class_wire;
  const std::vector<uint32_t> cls = WireClasses(wire, 1, &class_wire);
  LinkLoads loads(&capacity, &class_wire, 1);
  std::vector<RawSegment> raw;
  SweepSegments(schedule, p->paths, cls, &loads, [&](int64_t wave, int64_t next, size_t active) {
    RawSegment r{wave, next, active, 0.0};
    if (close && active > 0) loads.Drain(&r.drain_s);
    raw.push_back(r);
  });
  auto add_segment = [&](const RawSegment& r) {
    if (r.active == 0) return;  // an empty wave costs nothing
    PreparedSchedule::Segment seg;
    seg.waves = r.next - r.wave;
    seg.transfers.reserve(r.active);
    for (size_t i = 0; i < n; ++i) {
      if (ActiveAt(schedule.transfers[i], r.wave))
        seg.transfers.push_back(static_cast<uint32_t>(i));
    }
    p->segments.push_back(std::move(seg));
  };
  for (size_t a = 0; a < raw.size();) {
    // A run of one-wave segments: a pipeline's fill or drain, where each wave adds or retires
    // transfers.
    size_t b = a;
    while (close && b < raw.size() && raw[b].next - raw[b].wave == 1) ++b;
    PreparedSchedule::Segment closed;
    if (b - a >= 2 && CloseRun(schedule, *p, raw, a, b, capacity, &closed)) {
      p->segments.push_back(std::move(closed));
      a = b;
      continue;
    }
    for (const size_t stop = std::max(b, a + 1); a < stop; ++a) add_segment(raw[a]);
  }
  return p;
}

namespace {

// A closed run's bytes for one transfer: wire × scale, rounded, saturating.
uint64_t ScaledBytes(uint64_t wire, double scale) {
  const double bytes = std::round(static_cast<double>(wire) * scale);
  // 2^64 as a double: the first value a uint64_t cannot hold.
  constexpr double kLimit = 18446744073709551616.0;
  return bytes >= kLimit ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(bytes);
}

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
    pending_ = seg.transfers.size();
    const uint64_t n = static_cast<uint64_t>(seg.waves);
    for (uint32_t i : seg.transfers) {
      // The chain latency stands for every hop's latency, so flows add none of their own.
      // Saturating: a segment's bytes cannot wrap (kMaxBytes keeps them far below 2^64 today).
      const uint64_t wire = p_->wire_bytes[i];
      const uint64_t bytes = seg.scale > 0 ? ScaledBytes(wire, seg.scale)
                             : wire > std::numeric_limits<uint64_t>::max() / n
                                 ? std::numeric_limits<uint64_t>::max()
                                 : wire * n;
      network_->StartFlow(
          std::span<const LinkId>(p_->paths[i]), bytes, [this] { OnDelivered(); },
          sim::Time::Zero(), /*charge_path_latency=*/false);
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
