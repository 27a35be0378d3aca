// The expansion of a prepared schedule into flows (RunPreparedSchedule), and its run alone,
// recorded and resumed part-way (TimeAlone, ResumePreparedSchedule); schedule.h has the
// contracts and schedule.cc the pricing and preparation they share.
//
// A run is a chain of segments: each starts as one wave of flows (its classes, then its single
// transfers) carrying the segment's bytes, and the next starts when the last has drained; the
// chain latency follows the last. Alone on its links, a run's state at any instant is the bytes
// each flow of the running segment has still to move: max-min rates are constant between the
// drains of that segment's flows, so TimeAlone records each flow's rate after every drain, and
// a resumed run starts the segment's flows with what those rates leave.

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <utility>

#include "comm/schedule.h"

namespace trainsim::comm {

namespace {

// A closed run's bytes for one transfer: wire × scale, rounded, saturating.
uint64_t ScaledBytes(uint64_t wire, double scale) {
  const double bytes = std::round(static_cast<double>(wire) * scale);
  // 2^64 as a double: the first value a uint64_t cannot hold.
  constexpr double kLimit = 18446744073709551616.0;
  return bytes >= kLimit ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(bytes);
}

// TimeAlone's recording of a run: the timeline and each segment's flow ids, whose rates a probe
// reads after everything else at an instant has run (the rates settled).
struct AloneRecorder {
  AloneTimeline* timeline = nullptr;
  int64_t origin_ns = 0;
  std::vector<std::vector<FlowId>> ids;
  std::vector<int64_t> last_probe_ns;
};

// The expansion's state; owns itself and is deleted after on_done.
class ScheduleRun {
 public:
  ScheduleRun(FlowNetwork* network, std::shared_ptr<const PreparedSchedule> prepared,
              std::function<void()> on_done, AloneRecorder* record = nullptr)
      : network_(network), p_(std::move(prepared)), on_done_(std::move(on_done)), record_(record) {}

  void Start() { StartSegment(nullptr, 0); }

  // Starts segment `segment` part-way: its flows that `timeline` drains by `elapsed_ns` are
  // done, the others carry the bytes they have still to move (AloneTimeline::BytesLeft).
  void StartAt(size_t segment, const AloneTimeline& timeline, int64_t elapsed_ns) {
    segment_ = segment;
    StartSegment(&timeline, elapsed_ns);
  }

 private:
  // Runs the current segment as one wave whose flows carry the segment's bytes (see schedule.h,
  // "segments"); from a timeline, part-way (StartAt).
  void StartSegment(const AloneTimeline* timeline, int64_t elapsed_ns) {
    if (segment_ >= p_->segments.size()) {
      auto done = std::move(on_done_);
      const sim::Time latency = p_->chain_latency;
      sim::Engine* engine = network_->engine();
      if (record_ != nullptr) record_->timeline->total_ns = Now() + latency.nanos();
      delete this;
      // `done` itself (the engine skips an empty one), so that the event's kind is its caller's.
      engine->Schedule(latency, std::move(done));
      return;
    }
    const PreparedSchedule::Segment& seg = p_->segments[segment_];
    const std::vector<uint32_t>& singles = seg.classes.empty() ? seg.transfers : seg.singles;
    const size_t flows = singles.size() + seg.classes.size();
    if (record_ != nullptr) {
      AloneTimeline& t = *record_->timeline;
      t.segment_start_ns.push_back(Now());
      t.drain_ns.emplace_back(flows, 0);
      t.change_ns.emplace_back();
      t.rate_Bps.emplace_back();
      record_->ids.emplace_back(flows, 0);
      record_->last_probe_ns.push_back(-1);
    }
    const uint64_t n = static_cast<uint64_t>(seg.waves);
    // Saturating: a segment's bytes cannot wrap (kMaxBytes keeps them far below 2^64 today). A
    // closed run's flows carry wire × scale instead of wire × waves.
    auto whole = [n, scale = seg.scale](uint64_t wire) {
      if (scale > 0) return ScaledBytes(wire, scale);
      return wire > std::numeric_limits<uint64_t>::max() / n ? std::numeric_limits<uint64_t>::max()
                                                             : wire * n;
    };
    // Flow k of the segment (classes, then singles): its bytes, or with a timeline the bytes it
    // has still to move `elapsed_ns` into the run; false when it has drained by then.
    auto bytes = [&](size_t k, uint64_t wire, uint64_t* out) {
      *out = whole(wire);
      if (timeline == nullptr) return true;
      if (timeline->drain_ns[segment_][k] <= elapsed_ns) return false;
      const double left = timeline->BytesLeft(segment_, k, double(*out), elapsed_ns);
      *out = std::min(*out, static_cast<uint64_t>(std::llround(left)));
      return true;
    };
    pending_ = 0;
    size_t k = 0;
    uint64_t b = 0;
    // Counted first: a flow of 0 bytes still calls back through the engine, never at once.
    for (const auto& c : seg.classes) pending_ += bytes(k++, c.wire_bytes, &b) ? 1 : 0;
    for (uint32_t i : singles) pending_ += bytes(k++, p_->wire_bytes[i], &b) ? 1 : 0;
    k = 0;
    // The chain latency stands for every hop's latency, so flows add none of their own.
    if (record_ == nullptr) {
      // One callback for the segment, after its last flow: the flows that drain before it
      // schedule no event (FlowNetwork::SharedDone).
      auto done = std::make_shared<FlowNetwork::SharedDone>();
      done->pending = pending_;
      done->on_done = [this] {
        ++segment_;
        StartSegment(nullptr, 0);
      };
      for (const auto& c : seg.classes) {
        if (bytes(k++, c.wire_bytes, &b)) network_->StartFlowClass(c.members, b, done);
      }
      for (uint32_t i : singles) {
        if (!bytes(k++, p_->wire_bytes[i], &b)) continue;
        network_->StartFlow(p_->Path(i), b, done, sim::Time::Zero(),
                            /*charge_path_latency=*/false);
      }
      return;
    }
    for (const auto& c : seg.classes) {
      const size_t at = k++;
      if (!bytes(at, c.wire_bytes, &b)) continue;
      record_->ids.back()[at] =
          network_->StartFlowClass(c.members, b, [this, at] { OnDelivered(at); });
    }
    for (uint32_t i : singles) {
      const size_t at = k++;
      if (!bytes(at, p_->wire_bytes[i], &b)) continue;
      record_->ids.back()[at] = network_->StartFlow(
          p_->Path(i), b, [this, at] { OnDelivered(at); }, sim::Time::Zero(),
          /*charge_path_latency=*/false);
    }
    Probe();
  }

  // A recorded run's flow has drained (the others' rates may change now).
  void OnDelivered(size_t flow) {
    record_->timeline->drain_ns.back()[flow] = Now();
    if (--pending_ > 0) {
      Probe();
      return;
    }
    ++segment_;
    StartSegment(nullptr, 0);
  }

  // Records the current segment's rates once everything else at this instant has run (the
  // latest priority: after the network's drains and recomputation).
  void Probe() {
    const size_t s = record_->ids.size() - 1;
    const int64_t now = Now();
    if (record_->last_probe_ns[s] == now) return;
    record_->last_probe_ns[s] = now;
    network_->engine()->Schedule(
        sim::Time::Zero(),
        [rec = record_, net = network_, s, now] {
          AloneTimeline& t = *rec->timeline;
          t.change_ns[s].push_back(now);
          for (FlowId id : rec->ids[s]) t.rate_Bps[s].push_back(net->FlowRate(id));
        },
        std::numeric_limits<int>::max());
  }

  int64_t Now() const {
    return network_->engine()->now().nanos() - (record_ != nullptr ? record_->origin_ns : 0);
  }

  FlowNetwork* network_;
  std::shared_ptr<const PreparedSchedule> p_;
  std::function<void()> on_done_;
  AloneRecorder* record_;
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

std::vector<LinkId> ScheduleLinks(const PreparedSchedule& prepared) {
  std::vector<LinkId> links = prepared.path_links;
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  return links;
}

double AloneTimeline::BytesLeft(size_t segment, size_t flow, double bytes,
                                int64_t elapsed_ns) const {
  const std::vector<int64_t>& change = change_ns[segment];
  const size_t flows = drain_ns[segment].size();
  const int64_t drain = drain_ns[segment][flow];
  for (size_t i = 0; i < change.size() && change[i] < elapsed_ns; ++i) {
    const int64_t end =
        std::min({elapsed_ns, drain, i + 1 < change.size() ? change[i + 1] : drain});
    if (end <= change[i]) break;
    bytes -= rate_Bps[segment][i * flows + flow] * double(end - change[i]) * 1e-9;
  }
  return std::max(0.0, bytes);
}

// On `scratch` or a private engine and network, with `network`'s link factors on the
// schedule's links, so nothing else is on it.
std::optional<AloneTimeline> TimeAlone(const FlowNetwork& network,
                                       std::shared_ptr<const PreparedSchedule> prepared,
                                       FlowNetwork* scratch) {
  const Topology& topology = network.topology();
  // A link down on its path: the run never ends.
  for (LinkId l : prepared->path_links) {
    if (network.LinkBandwidthFactor(l) == 0) return std::nullopt;
  }
  std::optional<sim::Engine> own_engine;
  std::optional<FlowNetwork> own;
  FlowNetwork* alone = scratch;
  if (alone == nullptr) {
    own_engine.emplace();
    own.emplace(&*own_engine, &topology);
    alone = &*own;
  }
  sim::Engine& engine = *alone->engine();
  std::vector<LinkId> changed;
  for (LinkId l : prepared->path_links) {
    const double f = network.LinkBandwidthFactor(l);
    if (f != alone->LinkBandwidthFactor(l)) {
      alone->SetLinkBandwidthFactor(l, f);
      changed.push_back(l);
    }
  }
  const uint64_t splits = alone->class_splits();
  AloneTimeline t;
  t.base_ns = prepared->base_latency.nanos();
  AloneRecorder recorder;
  recorder.timeline = &t;
  recorder.origin_ns = engine.now().nanos();
  bool done = false;
  auto* run = new ScheduleRun(
      alone, prepared, [&done] { done = true; }, &recorder);
  engine.Schedule(prepared->base_latency, [run] { run->Start(); });
  engine.Run();
  // A class whose members split (they met different loads) no longer moves as one byte count.
  t.resumable = alone->class_splits() == splits;
  // The scratch network idle again, its links at full bandwidth.
  for (LinkId l : changed) alone->SetLinkBandwidthFactor(l, 1.0);
  engine.Run();
  assert(done);
  return t;
}

void ResumePreparedSchedule(FlowNetwork* network, std::shared_ptr<const PreparedSchedule> prepared,
                            const AloneTimeline& timeline, int64_t elapsed_ns,
                            std::function<void()> on_done) {
  assert(timeline.resumable && elapsed_ns >= 0 && elapsed_ns < timeline.total_ns);
  sim::Engine* engine = network->engine();
  if (elapsed_ns < timeline.base_ns) {
    auto* run = new ScheduleRun(network, std::move(prepared), std::move(on_done));
    engine->Schedule(sim::Time::Nanos(timeline.base_ns - elapsed_ns), [run] { run->Start(); });
    return;
  }
  // The segment running at elapsed_ns: the last that has started by then and not ended (a
  // segment ends when the next starts, the last at the chain latency's start).
  const size_t segments = timeline.segment_start_ns.size();
  const int64_t chain_start = timeline.total_ns - prepared->chain_latency.nanos();
  if (segments == 0 || elapsed_ns >= chain_start) {
    engine->Schedule(sim::Time::Nanos(timeline.total_ns - elapsed_ns), std::move(on_done));
    return;
  }
  size_t s = 0;
  while (s + 1 < segments && timeline.segment_start_ns[s + 1] <= elapsed_ns) ++s;
  auto* run = new ScheduleRun(network, std::move(prepared), std::move(on_done));
  run->StartAt(s, timeline, elapsed_ns);
}

}  // namespace trainsim::comm
