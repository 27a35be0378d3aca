// sim::EventQueue — the priority queue behind sim::Engine.
//
// Total order: (time, priority, sequence), where sequence is the insertion counter, so ties in
// time and priority pop in insertion order. Cancel() flags an event; flagged events are dropped
// when they reach the top, so size() counts only live events.
//
// Invariants: Pop() returns events in non-decreasing (time, priority, sequence) order; an event
// id is never reused within one queue (within the first 2^40 events); a cancelled event's
// handler is never returned.
// Costs: Push and Pop O(log n); Cancel O(1) amortised (cancelled keys are compacted away once
// they outnumber live ones, so cancelled far-future events cannot pile up).
// Limits: at most 2^24 (16.7 M) events pending at once (more aborts with a message: a memory
// limit, ~1 GB of handlers, not something a scenario reaches); ids are unique for the first 2^40
// (1.1e12) events. Heap layout and id packing: event_queue.cc; measurements: bench/README.md.
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
    EventId id = 0;  // the id Push returned; increases with insertion order
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
  // Implementation-defined storage (4-ary heap of small keys plus handler slots).
  // Field order keeps the key at 24 bytes.
  struct Key {
    int64_t time_ns;
    uint64_t seq;
    int32_t priority;
    uint32_t slot;
  };
  static bool Before(const Key& a, const Key& b) {
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.seq < b.seq;
  }
  bool IsLive(const Key& k) const { return slot_seq_[k.slot] == k.seq; }
  size_t MinChild(size_t first, size_t n) const;  // the smallest child among first.. of n keys
  void SiftUp(size_t i);
  void SiftDown(size_t i);
  void RemoveTop();  // removes heap_[0] (live or not), keeping the heap property
  void ReleaseSlot(uint32_t slot);
  void DropCancelledTop();
  void Compact();  // drops every cancelled key and re-heapifies
  std::vector<Key> heap_;
  std::vector<Handler> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint64_t> slot_seq_;  // seq owning each slot, 0 when free or cancelled
  uint64_t next_seq_ = 1;
  size_t live_ = 0;
};

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_EVENT_QUEUE_H_
