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
//   - RunSchedule (expansion, in schedule_run.cc): the same waves as flows on a FlowNetwork (their
//     latency is the chain latency, added after the last wave, not the flows' path latency).
//     Segments: a run of consecutive waves with the same active transfers (a ring's 2(n−1) steps)
//     starts as one wave whose flows carry the run's bytes, so a ring over n ranks costs n·C flows,
//     not 2(n−1)·n·C. On an idle network this is exact (each wave would last payload / r at the
//     same rate r). Under contention it lets a transfer on an uncontended link run ahead of the
//     per-step barrier, so the collective ends when its slowest transfer has moved the whole run:
//     max over transfers of the sum of their drains rather than the sum over steps of the slowest
//     drain. The two agree while contention is steady over the collective (a ring that shares one
//     NIC with a long pipeline send); NCCL's ring, throttled by the slowest link through its
//     bounded step buffers (NCCL_STEPS), lies between them.
//     Closing: a run of one-wave segments (a pipeline's fill or drain) starts as one segment
//     whose flows carry wire × s, s = the run's closed-form time / one wave of all of them at
//     once; exact on an idle network, and its contention bound, in schedule.h.
// They agree on an idle network because transfers of one wave that share a link carry the same
// wire bytes (every transfer of a ring or tree wave; NVLS's NVSwitch legs and its network legs
// differ but never share a link): the flows on the most loaded link are frozen first, at the
// smallest rate r, and keep r until they drain (every flow sharing that link has rate r, so none
// finishes earlier and frees capacity), so each transfer drains at wire / (its most loaded
// link's share) in the expansion too, and the wave ends with the slowest.

#include "comm/schedule.h"

#include <algorithm>
#include <cmath>
#include <iterator>
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
  // (A tree over 4,096 GPUs makes ~80 k hops: routed into one buffer, not a vector each.)
  thread_local std::vector<LinkId> route;
  topology.RouteInto(src_gpu, dst_gpu, &route);
  return Hop{HopClassOf(topology, src_gpu, dst_gpu), topology.PathLatency(route).seconds()};
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
  if (protocol == Protocol::kLL) efficiency /= schedule.ll_wire_scale;
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
// Links carrying one class are counted per (capacity, class, load), so a wave's drain costs a
// few buckets, not a pass over every loaded link; links carrying several are kept apart.
class LinkLoads {
 public:
  // capacity[l]: bytes/s of local link l (ScheduleRoutes); class_wire[c * np + k]: wire bytes of
  // class c under protocol k. Both must outlive the LinkLoads.
  LinkLoads(const std::vector<double>* capacity, const std::vector<double>* class_wire, size_t np)
      : class_wire_(class_wire),
        np_(np),
        classes_(np == 0 ? 0 : class_wire->size() / np),
        links_(capacity->size()) {
    std::map<double, uint32_t> index;
    for (size_t l = 0; l < links_.size(); ++l) {
      auto [it, added] = index.emplace((*capacity)[l], static_cast<uint32_t>(caps_.size()));
      if (added) caps_.push_back((*capacity)[l]);
      links_[l].cap = it->second;
    }
    buckets_.resize(caps_.size() * classes_);
  }

  void Add(std::span<const uint32_t> path, uint32_t cls) {
    for (uint32_t i : path) {
      Link& l = links_[i];
      if (!l.mixed && (l.count == 0 || l.cls == cls)) {
        // One class stays on the link (count == 0 means load == 0): move it up one load.
        std::vector<int32_t>& by_load = buckets_[l.cap * classes_ + cls];
        if (l.load > 0) --by_load[static_cast<size_t>(l.load)];
        ++l.load;
        l.cls = cls;
        ++l.count;
        const size_t load = static_cast<size_t>(l.load);
        if (by_load.size() <= load) by_load.resize(load + 1, 0);
        ++by_load[load];
        continue;
      }
      Count(i, -1);
      ++l.load;
      if (l.count == 0 || l.cls == cls) {  // (a mixed link: its first class)
        l.cls = cls;
        ++l.count;
      } else {
        auto& more = more_[i];
        l.mixed = true;
        auto it = std::find_if(more.begin(), more.end(), [cls](auto& m) { return m.first == cls; });
        if (it != more.end()) {
          ++it->second;
        } else {
          more.emplace_back(cls, 1);
        }
      }
    }
  }

  void Remove(std::span<const uint32_t> path, uint32_t cls) {
    for (uint32_t i : path) {
      Link& l = links_[i];
      if (!l.mixed) {
        // One class on the link, necessarily cls: move it down one load.
        std::vector<int32_t>& by_load = buckets_[l.cap * classes_ + l.cls];
        --by_load[static_cast<size_t>(l.load)];
        --l.load;
        --l.count;
        if (l.load > 0) ++by_load[static_cast<size_t>(l.load)];
        while (!by_load.empty() && by_load.back() == 0) by_load.pop_back();
        continue;
      }
      --l.load;
      if (l.count > 0 && l.cls == cls) {
        if (--l.count == 0) {
          auto it = more_.find(i);
          if (it != more_.end()) {  // promote another class
            l.cls = it->second.back().first;
            l.count = it->second.back().second;
            it->second.pop_back();
            if (it->second.empty()) more_.erase(it);
          }
        }
      } else {
        auto it = more_.find(i);
        auto m = std::find_if(it->second.begin(), it->second.end(),
                              [cls](auto& e) { return e.first == cls; });
        if (--m->second == 0) it->second.erase(m);
        if (it->second.empty()) more_.erase(it);
      }
      l.mixed = more_.count(i) != 0;
      Count(i, +1);  // (one class again: back into its bucket)
    }
  }

  // One wave's drain under each protocol, into out[0..np): the slowest active transfer's
  // wire / (min over its links of capacity / load). Taken as the max over loaded links of
  // (each class crossing it) wire / (capacity / load) — the same quotients (division rounds
  // monotonically), so the same value to the last bit — and, for a bucket of links of one
  // capacity and class, at its largest load only (the quotient grows with the load).
  void Drain(double* out) const {
    std::fill(out, out + np_, 0.0);
    for (size_t c = 0; c < caps_.size(); ++c) {
      for (size_t k = 0; k < classes_; ++k) {
        const std::vector<int32_t>& by_load = buckets_[c * classes_ + k];
        if (by_load.empty()) continue;
        const int32_t load = static_cast<int32_t>(by_load.size() - 1);
        DrainClass(static_cast<uint32_t>(k), caps_[c] / load, out);
      }
    }
    for (const auto& [i, more] : more_) {
      const Link& l = links_[i];
      const double rate = caps_[l.cap] / l.load;
      DrainClass(l.cls, rate, out);
      for (const auto& m : more) DrainClass(m.first, rate, out);
    }
  }

  // Whether every loaded link carries transfers of one wire class only.
  bool Uniform() const { return more_.empty(); }

 private:
  struct Link {
    int32_t load = 0;
    uint32_t cls = 0;    // one class crossing the link
    int32_t count = 0;   // its transfers
    uint32_t cap = 0;    // index into caps_
    bool mixed = false;  // several classes cross it (more_ holds the others; not in a bucket)
  };

  // Moves link i's (capacity, class, load) bucket count by `delta` (links of one class only).
  void Count(size_t i, int delta) {
    const Link& l = links_[i];
    if (l.load == 0 || l.mixed) return;
    std::vector<int32_t>& by_load = buckets_[l.cap * classes_ + l.cls];
    const size_t load = static_cast<size_t>(l.load);
    if (by_load.size() <= load) by_load.resize(load + 1, 0);
    by_load[load] += delta;
    while (!by_load.empty() && by_load.back() == 0) by_load.pop_back();
  }

  void DrainClass(uint32_t cls, double rate, double* out) const {
    for (size_t k = 0; k < np_; ++k) {
      const double d =
          rate > 0 ? (*class_wire_)[cls * np_ + k] / rate : std::numeric_limits<double>::infinity();
      out[k] = std::max(out[k], d);
    }
  }

  const std::vector<double>* class_wire_;
  size_t np_;
  size_t classes_;
  std::vector<Link> links_;
  std::vector<double> caps_;                   // distinct capacities
  std::vector<std::vector<int32_t>> buckets_;  // [cap * classes + class][load]: links
  std::map<size_t, std::vector<std::pair<uint32_t, int32_t>>> more_;  // links of several classes
};

}  // namespace

// The transfers' paths, flattened: transfer i crosses local[offset[i] .. offset[i + 1]), its
// links numbered in first-seen order (links[local] is the LinkId), of capacity[local] bytes/s
// (the topology's bandwidths; Capacities gives others).
struct ScheduleRoutes {
  std::vector<uint32_t> offset{0};
  std::vector<uint32_t> local;
  std::vector<LinkId> links;
  std::vector<double> capacity;
  std::span<const uint32_t> Local(size_t i) const {
    return {local.data() + offset[i], offset[i + 1] - offset[i]};
  }
};
namespace {

ScheduleRoutes FlattenPaths(const Topology& topology, const TransferSchedule& s) {
  ScheduleRoutes f;
  f.offset.reserve(s.transfers.size() + 1);
  // Room for four links a transfer (a tree's or a ring's mix of two-link NVLink hops and
  // six-link network ones averages about four), so the largest array is rarely grown by copying.
  f.local.reserve(s.transfers.size() * 4);
  std::vector<int32_t> index(static_cast<size_t>(topology.num_links()), -1);
  std::vector<LinkId> path;
  for (const PipelinedTransfer& t : s.transfers) {
    TransferPath(topology, t, &path);
    for (LinkId id : path) {
      const size_t l = static_cast<size_t>(id);
      if (index[l] < 0) {
        index[l] = static_cast<int32_t>(f.links.size());
        f.links.push_back(id);
        f.capacity.push_back(topology.link(id).bandwidth_Bps);
      }
      f.local.push_back(static_cast<uint32_t>(index[l]));
    }
    f.offset.push_back(static_cast<uint32_t>(f.local.size()));
  }
  return f;
}

// The local links' capacities: capacity_Bps per LinkId where it has an entry, else the
// topology's (as f.capacity).
std::vector<double> Capacities(const Topology& topology, const ScheduleRoutes& f,
                               const std::vector<double>& capacity_Bps) {
  std::vector<double> c(f.links.size());
  for (size_t j = 0; j < f.links.size(); ++j) {
    const size_t l = static_cast<size_t>(f.links[j]);
    c[j] = l < capacity_Bps.size() ? capacity_Bps[l] : topology.link(f.links[j]).bandwidth_Bps;
  }
  return c;
}

// Each transfer's wire class, and into *class_wire each class's wire bytes per wave,
// [c * np + k] under protocols[k]: transfers of one payload and leg have the same wire bytes
// under every protocol, and classes whose wire bytes agree under every protocol are one.
std::vector<uint32_t> WireClasses(const Topology& topology, const TransferSchedule& s,
                                  const std::vector<Protocol>& protocols,
                                  std::vector<uint64_t>* class_wire) {
  const size_t np = protocols.size();
  std::vector<uint32_t> cls(s.transfers.size());
  std::map<std::pair<uint64_t, int>, uint32_t> by_payload;
  std::map<std::vector<uint64_t>, uint32_t> by_wire;
  std::vector<uint32_t> canonical;  // by_payload's class -> class
  std::vector<uint64_t> row(np);
  class_wire->clear();
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    const PipelinedTransfer& t = s.transfers[i];
    if (i > 0 && t.payload_bytes == s.transfers[i - 1].payload_bytes &&
        t.leg == s.transfers[i - 1].leg) {
      cls[i] = cls[i - 1];  // fast path: algorithms emit runs of equal transfers
      continue;
    }
    auto [it, added] = by_payload.emplace(std::pair(t.payload_bytes, static_cast<int>(t.leg)),
                                          static_cast<uint32_t>(canonical.size()));
    if (added) {
      for (size_t k = 0; k < np; ++k) row[k] = TransferWireBytes(topology, s, t, protocols[k]);
      auto [w, new_wire] = by_wire.emplace(row, static_cast<uint32_t>(by_wire.size()));
      if (new_wire) class_wire->insert(class_wire->end(), row.begin(), row.end());
      canonical.push_back(w->second);
    }
    cls[i] = canonical[it->second];
  }
  return cls;
}

// A stably sorted run of indices with one key: sorted[previous run's end .. end).
struct KeyRun {
  int64_t key;
  size_t end;
};

// `idx` stably sorted by key(i), and its runs of equal keys: by counting when the keys span a
// range no wider than a few times their number (a pipeline's waves), else by comparison.
template <typename Key>
std::vector<KeyRun> SortByKey(std::vector<uint32_t>* idx, Key key) {
  std::vector<KeyRun> runs;
  if (idx->empty()) return runs;
  int64_t lo = key((*idx)[0]), hi = lo;
  for (uint32_t i : *idx) {
    lo = std::min(lo, key(i));
    hi = std::max(hi, key(i));
  }
  const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
  if (range > 4 * idx->size() + 64) {
    std::stable_sort(idx->begin(), idx->end(),
                     [&key](uint32_t a, uint32_t b) { return key(a) < key(b); });
    for (size_t j = 0; j < idx->size(); ++j) {
      const int64_t k = key((*idx)[j]);
      if (runs.empty() || runs.back().key != k) runs.push_back({k, j});
      runs.back().end = j + 1;
    }
    return runs;
  }
  std::vector<size_t> start(range + 1, 0);
  for (uint32_t i : *idx) ++start[static_cast<size_t>(key(i) - lo) + 1];
  for (size_t k = 1; k <= range; ++k) {
    start[k] += start[k - 1];
    if (start[k] > start[k - 1]) runs.push_back({lo + static_cast<int64_t>(k) - 1, start[k]});
  }
  std::vector<uint32_t> sorted(idx->size());
  for (uint32_t i : *idx) sorted[start[static_cast<size_t>(key(i) - lo)]++] = i;
  idx->swap(sorted);
  return runs;
}

// Visits the segments in wave order: visit(wave, next, active) with `loads` holding the
// `active` transfers of waves [wave, next). Each transfer is added and removed once.
template <typename Visit>
void SweepSegments(const TransferSchedule& s, const ScheduleRoutes& paths,
                   const std::vector<uint32_t>& cls, LinkLoads* loads, Visit visit) {
  const auto& t = s.transfers;
  std::vector<uint32_t> by_start;
  bool empty_transfers = false;  // num_waves < 1: never active, but they still bound segments
  by_start.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].num_waves >= 1) {
      by_start.push_back(static_cast<uint32_t>(i));
    } else {
      empty_transfers = true;
    }
  }
  std::vector<uint32_t> by_end = by_start;
  const std::vector<KeyRun> starts =
      SortByKey(&by_start, [&t](uint32_t i) { return t[i].first_wave; });
  const std::vector<KeyRun> ends =
      SortByKey(&by_end, [&t](uint32_t i) { return t[i].first_wave + t[i].num_waves; });
  // Boundaries (where the active set may change): 0, every first wave and every end, sorted.
  std::vector<int64_t> bounds;
  if (empty_transfers) {
    bounds = Boundaries(s);
  } else {
    bounds.push_back(0);
    for (const KeyRun& r : starts) bounds.push_back(r.key);
    for (const KeyRun& r : ends) bounds.push_back(r.key);
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  }
  const int64_t end_wave = s.total_waves();
  size_t started = 0, ended = 0, start_run = 0, end_run = 0;
  for (size_t b = 0; b < bounds.size() && bounds[b] < end_wave; ++b) {
    const int64_t wave = bounds[b];
    const int64_t next = b + 1 < bounds.size() ? std::min(bounds[b + 1], end_wave) : end_wave;
    // The transfers that end here leave before the new ones come (the counts are the same in
    // either order, but a link that the old and the new wave share with different wire bytes
    // would be kept apart in the meantime, at a map lookup per link crossing).
    for (; end_run < ends.size() && ends[end_run].key <= wave; ++end_run) {
      for (; ended < ends[end_run].end; ++ended) {
        loads->Remove(paths.Local(by_end[ended]), cls[by_end[ended]]);
      }
    }
    for (; start_run < starts.size() && starts[start_run].key <= wave; ++start_run) {
      for (; started < starts[start_run].end; ++started) {
        loads->Add(paths.Local(by_start[started]), cls[by_start[started]]);
      }
    }
    visit(wave, next, started - ended);
  }
}

}  // namespace

std::shared_ptr<ScheduleRoutes> RouteSchedule(const Topology& topology,
                                              const TransferSchedule& schedule) {
  return std::make_shared<ScheduleRoutes>(FlattenPaths(topology, schedule));
}

std::vector<double> EvaluateSchedule(const Topology& topology, const TransferSchedule& schedule,
                                     const std::vector<Protocol>& protocols,
                                     const std::vector<double>* capacity_Bps,
                                     const ScheduleRoutes* routes) {
  const size_t np = protocols.size();
  std::vector<double> total(np, 0.0);
  for (size_t k = 0; k < np; ++k) {
    const ProtocolCosts costs = NcclCosts(schedule.family, protocols[k]);
    total[k] = schedule.launches * costs.base_s +
               (schedule.chain_latency_s ? schedule.chain_latency_s(costs) : 0.0);
  }
  if (schedule.transfers.empty() || np == 0) return total;

  ScheduleRoutes own;
  if (routes == nullptr) {
    own = FlattenPaths(topology, schedule);
    routes = &own;
  }
  const ScheduleRoutes& paths = *routes;
  std::vector<double> capacity;
  if (capacity_Bps != nullptr) capacity = Capacities(topology, paths, *capacity_Bps);
  std::vector<uint64_t> class_bytes;
  const std::vector<uint32_t> cls = WireClasses(topology, schedule, protocols, &class_bytes);
  const std::vector<double> class_wire(class_bytes.begin(), class_bytes.end());
  // Transfers of a wave that share a link carry the same wire bytes, so the flows of the most
  // loaded link (capacity / transfers crossing it) are frozen first by progressive filling and
  // drain last among those they share links with; each transfer therefore drains at
  // wire / (min over its links of capacity / load), and the wave lasts as long as the slowest.
  LinkLoads loads(capacity_Bps != nullptr ? &capacity : &paths.capacity, &class_wire, np);
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
bool CloseRun(const TransferSchedule& schedule, const ScheduleRoutes& paths,
              const std::vector<uint32_t>& cls, const std::vector<double>& class_wire,
              const std::vector<RawSegment>& raw, size_t a, size_t b,
              PreparedSchedule::Segment* out) {
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
  LinkLoads loads(&paths.capacity, &class_wire, 1);
  for (uint32_t i : run) loads.Add(paths.Local(i), cls[i]);
  double together_s = 0;
  loads.Drain(&together_s);
  // Exact only where transfers sharing a link carry the same bytes (as within a wave).
  if (!loads.Uniform() || !(together_s > 0) || !std::isfinite(together_s)) return false;
  out->waves = stop - first;
  out->scale = idle_s / together_s;
  out->transfers = std::move(run);
  return true;
}

// A segment's transfers with the same flow_class >= 0 and wire bytes, two or more, become one
// class of flows (in order of their first transfer); the others run one flow each.
void GroupClasses(const TransferSchedule& schedule, const PreparedSchedule& p,
                  PreparedSchedule::Segment* seg) {
  std::map<std::pair<int, uint64_t>, std::vector<uint32_t>> groups;
  std::vector<std::pair<int, uint64_t>> order;
  for (uint32_t i : seg->transfers) {
    const int tag = schedule.transfers[i].flow_class;
    if (tag < 0 || p.Path(i).empty()) continue;
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
    members.reserve(idx.size());
    for (uint32_t i : idx) {
      members.emplace_back(p.Path(i));
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
                                                        Protocol protocol, SegmentGrouping grouping,
                                                        std::shared_ptr<ScheduleRoutes> routes) {
  auto p = std::make_shared<PreparedSchedule>();
  const ProtocolCosts costs = NcclCosts(schedule.family, protocol);
  p->base_latency = sim::Time::FromSeconds(schedule.launches * costs.base_s);
  p->chain_latency =
      sim::Time::FromSeconds(schedule.chain_latency_s ? schedule.chain_latency_s(costs) : 0.0);
  const size_t n = schedule.transfers.size();
  if (routes == nullptr) routes = RouteSchedule(topology, schedule);
  const ScheduleRoutes& paths = *routes;
  std::vector<uint64_t> class_bytes;
  const std::vector<uint32_t> cls = WireClasses(topology, schedule, {protocol}, &class_bytes);
  const std::vector<double> class_wire(class_bytes.begin(), class_bytes.end());
  p->wire_bytes.resize(n);
  for (size_t i = 0; i < n; ++i) p->wire_bytes[i] = class_bytes[cls[i]];
  // Segments: the waves between consecutive boundaries share one active set.
  const bool close = grouping == SegmentGrouping::kClosePipelines;
  LinkLoads loads(&paths.capacity, &class_wire, 1);
  std::vector<RawSegment> raw;
  SweepSegments(schedule, paths, cls, &loads, [&](int64_t wave, int64_t next, size_t active) {
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
    if (b - a >= 2 && CloseRun(schedule, paths, cls, class_wire, raw, a, b, &closed)) {
      p->segments.push_back(std::move(closed));
      a = b;
      continue;
    }
    for (const size_t stop = std::max(b, a + 1); a < stop; ++a) add_segment(raw[a]);
  }
  p->path_links.resize(paths.local.size());
  for (size_t j = 0; j < paths.local.size(); ++j) p->path_links[j] = paths.links[paths.local[j]];
  if (routes.use_count() == 1) {  // (nobody else will read them: no copy)
    p->path_begin = std::move(routes->offset);
  } else {
    p->path_begin = paths.offset;
  }
  for (auto& seg : p->segments) GroupClasses(schedule, *p, &seg);
  return p;
}

}  // namespace trainsim::comm
