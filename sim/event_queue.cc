// How sim::EventQueue is laid out (its contract is in event_queue.h).
//
// Costs: Push and Pop are O(log n) on a 4-ary heap of 24-byte keys (time, sequence, priority,
// slot); handlers live in a slot vector so the heap moves only keys. (4-ary rather than binary:
// same speed with 1K pending, faster with 1M; see bench/README.md.) Cancel is O(1) amortised:
// the key stays in the heap, flagged, until it reaches the top or until cancelled keys outnumber
// live ones, when the heap is compacted (so cancelled far-future events cannot pile up).
//
// Limits: an id packs the slot (low 24 bits) and the sequence (high 40 bits), so at most 2^24
// (16.7 M) events may be pending at once (exceeding it aborts with a message: it is a memory
// limit, ~1 GB of handlers, not something a scenario reaches), and ids are unique for the first
// 2^40 (1.1e12) events a queue ever holds. Ordering always uses the full 64-bit sequence.

#include "sim/event_queue.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace trainsim::sim {
namespace {

// Heap arity. 4 rather than 2 (measured in bench/README.md): half the levels, and a node's
// four 24-byte children span at most three cache lines, so with 1M pending the heap takes fewer
// cache misses per pop; with 1K pending the two are equal once MinChild avoids a loop.
constexpr size_t kArity = 4;

constexpr int kSlotBits = 24;
constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
constexpr uint64_t kMaxSlots = uint64_t{1} << kSlotBits;
// The id keeps the low 64 - kSlotBits bits of the sequence.
constexpr uint64_t kIdSeqMask = (uint64_t{1} << (64 - kSlotBits)) - 1;

EventId MakeId(uint64_t seq, uint32_t slot) { return ((seq & kIdSeqMask) << kSlotBits) | slot; }

}  // namespace

EventId EventQueue::Push(Time time, int priority, Handler handler) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = std::move(handler);
  } else {
    if (slots_.size() >= kMaxSlots) {
      // A capacity limit (about a gigabyte of pending handlers), not reachable from a scenario.
      std::fprintf(stderr, "trainsim: sim::EventQueue holds more than %llu pending events\n",
                   static_cast<unsigned long long>(kMaxSlots));
      std::abort();
    }
    slot = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::move(handler));
    slot_seq_.push_back(0);
  }
  const uint64_t seq = next_seq_++;
  slot_seq_[slot] = seq;
  heap_.push_back(Key{time.nanos(), seq, priority, slot});
  SiftUp(heap_.size() - 1);
  ++live_;
  return MakeId(seq, slot);
}

bool EventQueue::Cancel(EventId id) {
  const uint64_t slot = id & kSlotMask;
  if (slot >= slot_seq_.size()) return false;
  const uint64_t seq = slot_seq_[slot];
  // seq == 0: the slot is free or its event was cancelled. A different sequence: the event this
  // id named has run and the slot now holds a newer one.
  if (seq == 0 || (seq & kIdSeqMask) != (id >> kSlotBits)) return false;
  slot_seq_[slot] = 0;
  slots_[slot] = nullptr;  // release captured state now, not when the key surfaces
  --live_;
  // The key stays in the heap until it surfaces; compact when dead keys outnumber live ones so
  // that cancelled far-future events cannot grow the heap without bound. Amortised O(1).
  const size_t dead = heap_.size() - live_;
  if (dead > 64 && dead > live_) Compact();
  return true;
}

Time EventQueue::NextTime() {
  assert(!empty());
  DropCancelledTop();
  return Time::Nanos(heap_.front().time_ns);
}

EventQueue::Event EventQueue::Pop() {
  assert(!empty());
  DropCancelledTop();
  const Key top = heap_.front();
  Event ev;
  ev.time = Time::Nanos(top.time_ns);
  ev.priority = top.priority;
  ev.id = MakeId(top.seq, top.slot);
  ev.handler = std::move(slots_[top.slot]);
  RemoveTop();
  ReleaseSlot(top.slot);
  --live_;
  return ev;
}

void EventQueue::SiftUp(size_t i) {
  const Key k = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / kArity;
    if (!Before(k, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = k;
}

size_t EventQueue::MinChild(size_t first, size_t n) const {
  if (first + kArity <= n) {
    // All children present (the common case): a two-round tournament with no loop.
    static_assert(kArity == 4);
    const size_t a = first + (Before(heap_[first + 1], heap_[first]) ? 1 : 0);
    const size_t b = first + 2 + (Before(heap_[first + 3], heap_[first + 2]) ? 1 : 0);
    return Before(heap_[b], heap_[a]) ? b : a;
  }
  size_t child = first;
  for (size_t c = first + 1; c < n; ++c) {
    if (Before(heap_[c], heap_[child])) child = c;
  }
  return child;
}

void EventQueue::SiftDown(size_t i) {
  const size_t n = heap_.size();
  const Key k = heap_[i];
  for (;;) {
    const size_t first = kArity * i + 1;
    if (first >= n) break;
    const size_t child = MinChild(first, n);
    if (!Before(heap_[child], k)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = k;
}

void EventQueue::RemoveTop() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) SiftDown(0);
}

void EventQueue::ReleaseSlot(uint32_t slot) {
  slot_seq_[slot] = 0;
  free_slots_.push_back(slot);
}

void EventQueue::DropCancelledTop() {
  // Without cancelled keys in the heap the top is live: skip the slot lookup (a cache miss
  // when the queue is large).
  if (heap_.size() == live_) return;
  while (!heap_.empty() && !IsLive(heap_.front())) {
    const uint32_t slot = heap_.front().slot;
    RemoveTop();
    ReleaseSlot(slot);
  }
}

void EventQueue::Compact() {
  size_t out = 0;
  for (size_t i = 0; i < heap_.size(); ++i) {
    if (IsLive(heap_[i])) {
      heap_[out++] = heap_[i];
    } else {
      ReleaseSlot(heap_[i].slot);
    }
  }
  heap_.resize(out);
  // Floyd's bottom-up heap construction; the result depends only on the keys, so it is
  // deterministic, and the total order means pop order does not depend on the heap's shape.
  if (heap_.size() > 1) {
    for (size_t i = (heap_.size() - 2) / kArity + 1; i-- > 0;) SiftDown(i);
  }
}

}  // namespace trainsim::sim
