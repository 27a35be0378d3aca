// The step's Chrome trace-event JSON (step_simulation.h, WriteChromeTrace; docs/trace.md) and
// the link utilisation counters the recorder derives from the pipeline transfers.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "sim/trace_writer.h"
#include "step/step_simulation.h"
#include "step/step_state.h"

namespace trainsim::step {
namespace {

// Process id of the "network links" process holding the link counters: above any GPU id
// (GPU ids are below 2^30: the topology is built for far fewer GPUs).
constexpr int kNetworkPid = 1 << 30;
// Thread ids: track · kLanesPerTrack + lane, so a track's extra lanes sort after it.
constexpr int kLanesPerTrack = 1000;

}  // namespace

const char* TraceTrackName(int track) {
  switch (track) {
    case kTrackCompute:
      return "compute";
    case kTrackTp:
      return "tp";
    case kTrackCp:
      return "cp";
    case kTrackEp:
      return "ep";
    case kTrackPp:
      return "pp";
    case kTrackDp:
      return "dp";
    case kTrackEmbedding:
      return "embedding all_reduce";
    default:
      return "other";
  }
}

void TraceRecorder::LinkCounters(const comm::Topology& topo, const std::vector<double>& capacity) {
  if (!enabled_) return;
  std::map<comm::LinkId, std::vector<std::pair<int64_t, double>>> deltas;
  for (const Transfer& t : transfers_) {
    for (comm::LinkId l : t.path) {
      deltas[l].push_back({t.start_ns, t.rate_Bps});
      deltas[l].push_back({t.end_ns, -t.rate_Bps});
    }
  }
  for (auto& [link, d] : deltas) {
    const double cap = capacity[size_t(link)];
    if (!(cap > 0)) continue;
    std::stable_sort(d.begin(), d.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    extra_.link_names.push_back({link, topo.LinkName(link)});
    double sum = 0;
    for (size_t i = 0; i < d.size();) {
      const int64_t at = d[i].first;
      for (; i < d.size() && d[i].first == at; ++i) sum += d[i].second;
      // Adding and removing the same rates can leave a rounding residue; below a billionth of
      // the capacity it is zero.
      if (sum < cap * 1e-9) sum = 0;
      extra_.counters.push_back({-link - 1, "link utilisation (%)", at, 100 * sum / cap});
    }
  }
}

void WriteChromeTrace(const StepResult& result, std::ostream& out) {
  sim::TraceWriter w;
  const StepTrace& x = result.trace_extra;
  std::map<int, TraceGpu> role;
  for (const TraceGpu& g : x.gpus) role[g.gpu] = g;
  // What each slice's track is called and which lane of it the slice is drawn on: a slice that
  // would partially overlap one already on the lane (e.g. a receive from each neighbour at
  // once) moves to the next lane, so every lane holds slices that are disjoint or nested.
  std::map<std::pair<int, int>, std::vector<size_t>> by_track;
  for (size_t i = 0; i < result.trace.size(); ++i) {
    by_track[{result.trace[i].gpu, result.trace[i].track}].push_back(i);
  }
  std::vector<int> tid(result.trace.size(), 0);
  for (auto& [key, idx] : by_track) {
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const TraceSlice &p = result.trace[a], &q = result.trace[b];
      if (p.start_ns != q.start_ns) return p.start_ns < q.start_ns;
      return p.duration_ns > q.duration_ns;  // the enclosing slice first
    });
    std::vector<std::vector<int64_t>> lanes;  // per lane: ends of the open slices
    for (size_t i : idx) {
      const TraceSlice& s = result.trace[i];
      const int64_t end = s.start_ns + s.duration_ns;
      size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes.size()) lanes.emplace_back();
        std::vector<int64_t>& open = lanes[lane];
        while (!open.empty() && open.back() <= s.start_ns) open.pop_back();
        if (open.empty() || open.back() >= end) {
          open.push_back(end);
          break;
        }
      }
      tid[i] = key.second * kLanesPerTrack + int(lane);
      const TraceGpu g = role.count(key.first) ? role[key.first] : TraceGpu{key.first, 0, 0};
      std::string name = "stage " + std::to_string(g.stage) + " / tp 0 / ";
      name += TraceTrackName(key.second);
      if (lane > 0) name += " (" + std::to_string(lane + 1) + ")";
      w.SetThreadName(key.first, tid[i], name);
      w.SetThreadSortIndex(key.first, tid[i], tid[i]);
    }
  }
  std::set<int> gpus;
  for (const TraceSlice& s : result.trace) gpus.insert(s.gpu);
  for (const TraceCounterSample& c : x.counters) {
    if (c.gpu >= 0) gpus.insert(c.gpu);
  }
  for (int gpu : gpus) {
    const TraceGpu g = role.count(gpu) ? role[gpu] : TraceGpu{gpu, 0, 0};
    w.SetProcessName(gpu, "GPU " + std::to_string(gpu) + " (dp " + std::to_string(g.replica) +
                              ", stage " + std::to_string(g.stage) + ", tp 0)");
    w.SetProcessSortIndex(gpu, gpu);
  }
  for (size_t i = 0; i < result.trace.size(); ++i) {
    const TraceSlice& s = result.trace[i];
    w.Complete(s.name, s.category, s.gpu, tid[i], sim::Time::Nanos(s.start_ns),
               sim::Time::Nanos(s.duration_ns), s.args);
  }
  // Each flow end at its slice's midpoint: strictly inside the slice (slices last at least
  // 1 ns; a 1-ns slice's midpoint is its start), never on a neighbour's boundary.
  for (const TraceFlow& f : x.flows) {
    const TraceSlice& a = result.trace[f.from_slice];
    const TraceSlice& b = result.trace[f.to_slice];
    w.FlowStart(a.name, a.category, a.gpu, tid[f.from_slice],
                sim::Time::Nanos(a.start_ns + a.duration_ns / 2), f.id);
    w.FlowEnd(a.name, a.category, b.gpu, tid[f.to_slice],
              sim::Time::Nanos(b.start_ns + b.duration_ns / 2), f.id);
  }
  std::map<int, std::string> link_names(x.link_names.begin(), x.link_names.end());
  if (!link_names.empty()) {
    w.SetProcessName(kNetworkPid, "network links");
    w.SetProcessSortIndex(kNetworkPid, kNetworkPid);
  }
  for (const TraceCounterSample& c : x.counters) {
    if (c.gpu >= 0) {
      w.Counter(c.name, c.gpu, sim::Time::Nanos(c.at_ns), {{"GiB", c.value}});
    } else {
      const int link = -c.gpu - 1;
      w.Counter("link " + link_names[link] + " utilisation (%)", kNetworkPid,
                sim::Time::Nanos(c.at_ns), {{"percent", c.value}});
    }
  }
  out << w.ToJson();
}

}  // namespace trainsim::step
