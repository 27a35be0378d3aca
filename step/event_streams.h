// Event streams of short steps, compared to tell a steady state from a transient (the
// steady-state extrapolation of step_simulation.cc; docs/step-simulation.md, "Many
// micro-batches"). A stream is the time, in ns, of every event one simulated step ran, in the
// order the engine ran them (sim::Engine::RecordTimes).
//
// Contract: `CompareGroupInserted(a, b, from)` says whether `b`, the stream of a step one group
// of micro-batches longer than the step of `a`, is `a` with one group inserted: equal up to some
// index p, then every event of `a` from p on `shift` ns later in `b` (within kJitterNs),
// `events` events further on. With `from`, the previous comparison's `first_difference` (the index
// at which `a` parted from the stream one group shorter), `a` and `b` must part exactly one group
// later (p = from + events), and every event of `a` from `from` on must recur `shift` ns later in
// `b`: the group inserted into `a` is found again in `b`, so two consecutive groups are the same,
// not only the steps' endings. Evidence that the simulation's state repeats, not proof: a drift
// that moves no event within two groups passes. Pure functions of their arguments.
#ifndef TRAINSIM_STEP_EVENT_STREAMS_H_
#define TRAINSIM_STEP_EVENT_STREAMS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace trainsim::step {

// Events of a repeating state may land 1 ns apart in two copies of a group (each duration is
// rounded to the engine's nanosecond from doubles; session 24's folded exchanges showed it), so
// event times are compared within this.
inline constexpr int64_t kJitterNs = 1;

struct GroupInsert {
  bool inserted = false;        // `b` is `a` with one group inserted
  size_t first_difference = 0;  // first index at which `a` and `b` differ; max if `a` is empty
  size_t events = 0;            // the inserted group's events (b.size() - a.size())
  int64_t shift = 0;            // ns by which `a`'s events after the group move in `b`
};

GroupInsert CompareGroupInserted(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                 size_t from = std::numeric_limits<size_t>::max());

// Two consecutive comparisons that each found the same group (events and shift) inserted.
bool SameGroupInserted(const GroupInsert& x, const GroupInsert& y);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_EVENT_STREAMS_H_
