// sim::EventQueue — the priority queue behind sim::Engine.
//
// Total order: (time, priority, sequence), where sequence is the insertion counter, so ties in
// time and priority pop in insertion order. Cancel() flags an event; flagged events are dropped
// when they reach the top, so size() counts only live events.
//
// Invariants: Pop() returns events in non-decreasing (time, priority, sequence) order; an event
// id is never reused within one queue; a cancelled event's handler is never returned.
#ifndef TRAINSIM_SIM_EVENT_QUEUE_H_
#define TRAINSIM_SIM_EVENT_QUEUE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/time.h"

namespace trainsim::sim {

using Handler = std::function<void()>;
using EventId = uint64_t;  // 0 is never a valid id.

class EventQueue {
 public:
  struct Event {
    Time time;
    int priority = 0;
    EventId id = 0;  // doubles as the insertion sequence
    Handler handler;
  };

  EventId Push(Time time, int priority, Handler handler);
  bool Cancel(EventId id);
  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // REQUIRES: !empty(). The time of the next live event.
  Time NextTime();
  // REQUIRES: !empty(). Removes and returns the next live event.
  Event Pop();

 private:
  // Implementation-defined storage (binary heap of small keys plus handler slots).
  struct Key {
    int64_t time_ns;
    int priority;
    uint64_t seq;
    uint32_t slot;
  };
  void DropCancelledTop();
  std::vector<Key> heap_;
  std::vector<Handler> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint64_t> slot_seq_;  // seq owning each slot, 0 when free or cancelled
  uint64_t next_seq_ = 1;
  size_t live_ = 0;
};

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_EVENT_QUEUE_H_
