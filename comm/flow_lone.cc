// Lone flows (comm::FlowNetwork's contract in flow_network.h): a flow that starts on links no
// other flow crosses drains at its rate alone, outside the solve, until another flow starts on
// one of its links or one of their capacities changes; then it joins the solve with the bytes
// it has left. In a training step most K/V exchanges and pipeline sends meet nothing on their
// links, and each would otherwise cost a recomputation at its start and at its end.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "comm/flow_network.h"

namespace trainsim::comm {

void FlowNetwork::CountLinks(uint32_t slot, int delta) {
  const std::span<const LinkId> links = ViewOf(slot).links;
  if (links.size() > kLoneLinks) {
    // Unordered (only ever searched for a meeting flow): removed by swapping in the last.
    Flow& f = flows_[slot];
    if (delta > 0) {
      f.big_at = uint32_t(big_.size());
      big_.push_back(slot);
    } else {
      const uint32_t last = big_.back();
      big_[f.big_at] = last;
      flows_[last].big_at = f.big_at;
      big_.pop_back();
    }
    return;
  }
  for (LinkId l : links) link_users_[size_t(l)] += uint32_t(delta);
}

bool FlowNetwork::GoLone(uint32_t slot) {
  // Its rate alone must be known, as the solve would find it (the memo of the class or path
  // alone, under today's capacities, without a split), and no other flow may share a link with
  // it. REQUIRES: not counted on its links yet.
  if (!lone_on_ || capacity_version_ != memo_capacity_version_) return false;
  Flow& f = flows_[slot];
  if (f.number >= alone_.size() || alone_[f.number] == 0) return false;
  const ClassView self = ViewOf(slot);
  if (self.links.size() > kLoneLinks) return false;
  for (LinkId l : self.links) {
    if (link_users_[size_t(l)] != 0) return false;
  }
  for (uint32_t other : big_) {
    if (solver_.Meets(self, ViewOf(other))) return false;
  }
  const Memo& m = memos_[alone_[f.number] - 1];
  if (m.parts != kNoParts) return false;
  const double rate = MemoRates(m)[0];
  if (!(rate > 0)) return false;
  const double ns = std::ceil(f.remaining_bytes / rate * 1e9);  // (as Recompute rounds)
  if (!(ns < 9e18)) return false;
  const int64_t now_ns = engine_->now().nanos();
  f.rate_Bps = rate;
  f.finish_ns = now_ns + static_cast<int64_t>(ns);
  f.lone = true;
  f.lone_since_ns = now_ns;
  for (LinkId l : self.links) lone_on_link_[size_t(l)] = slot + 1;
  lone_.push_back(slot);
  ++lone_flows_;
  if (drain_event_ == 0 || f.finish_ns < drain_event_ns_) ScheduleNextDrain();
  return true;
}

void FlowNetwork::Unlone(uint32_t slot) {
  flows_[slot].lone = false;
  for (LinkId l : ViewOf(slot).links) lone_on_link_[size_t(l)] = 0;
}

void FlowNetwork::JoinSolve(uint32_t slot) {
  // Every solved flow is brought to now first (Advance), as the recomputation this instant
  // would; the lone flow's bytes left are what Advance would leave over its lone interval.
  const int64_t now_ns = engine_->now().nanos();
  Advance(now_ns);
  Flow& f = flows_[slot];
  const double dt_s = static_cast<double>(now_ns - f.lone_since_ns) * 1e-9;
  f.remaining_bytes = std::max(0.0, f.remaining_bytes - f.rate_Bps * dt_s);
  Unlone(slot);
  lone_.erase(std::find(lone_.begin(), lone_.end(), slot));
  MarkFresh(slot);
  // At its place in start order (active_ is kept in start order).
  const auto at =
      std::upper_bound(active_.begin(), active_.end(), f.start_seq,
                       [this](uint64_t seq, uint32_t s) { return seq < flows_[s].start_seq; });
  active_.insert(at, slot);
  RequestRecompute();
}

void FlowNetwork::TouchLone(uint32_t slot) {
  const ClassView view = ViewOf(slot);
  if (view.links.size() <= kLoneLinks) {
    for (LinkId l : view.links) {
      const uint32_t lone = lone_on_link_[size_t(l)];
      if (lone != 0) JoinSolve(lone - 1);
    }
    return;
  }
  for (size_t i = 0; i < lone_.size();) {
    const uint32_t other = lone_[i];
    if (solver_.Meets(view, ViewOf(other))) {
      JoinSolve(other);  // (erases lone_[i])
    } else {
      ++i;
    }
  }
}

void FlowNetwork::TouchLone(LinkId link) {
  const uint32_t lone = lone_on_link_[size_t(link)];
  if (lone != 0) JoinSolve(lone - 1);
}

}  // namespace trainsim::comm
