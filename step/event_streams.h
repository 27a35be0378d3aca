// Event streams of short steps, compared to tell a steady state from a transient (the
// steady-state extrapolation of step_simulation.cc; docs/step-simulation.md, "Many
// micro-batches"). A stream is the time, in ns, of every event one simulated step ran, in the
// order the engine ran them, and the kind of each (its handler's code; sim::Engine::RecordTimes).
//
// Contract: `CompareGroupRepeated(a, b)` says whether `b`, the stream of a step one group of
// micro-batches longer than the step of `a`, is `a` with one more copy of its last whole group:
// equal up to some index p (where `a` starts to end), then every event of `a` from p on `shift`
// ns later in `b` (within kJitterNs), `events` events further on, and the `events` events before
// p found again `shift` ns later as the group inserted; events that line up must be of the same
// kind (streams with kinds must carry one per event; two without are compared by time alone). So
// two consecutive groups of `b` are the same and the steps' endings are too, not only the endings
// (slack a wait absorbs does not show in them). Evidence that the simulation's state repeats, not
// proof: a drift that moves no event by more than kJitterNs within two groups passes. A pure
// function of its arguments.

#ifndef TRAINSIM_STEP_EVENT_STREAMS_H_
#define TRAINSIM_STEP_EVENT_STREAMS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainsim::step {

// Events of a repeating state may land 1 ns apart in two copies of a group (each duration is
// rounded to the engine's nanosecond from doubles; session 24's folded exchanges showed it), so
// event times are compared within this.
inline constexpr int64_t kJitterNs = 1;

struct GroupInsert {
  bool inserted = false;        // `b` is `a` with one group inserted
  size_t first_difference = 0;  // first index at which `a` and `b` differ
  size_t events = 0;            // the inserted group's events (b.size() - a.size())
  int64_t shift = 0;            // ns by which `a`'s events after the group move in `b`
};

struct EventStream {
  std::vector<int64_t> times;
  std::vector<uint32_t> kinds;  // one per time, or none; not compared only if both have none
};

GroupInsert CompareGroupRepeated(const EventStream& a, const EventStream& b);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_EVENT_STREAMS_H_
