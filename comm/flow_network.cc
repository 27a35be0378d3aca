// How comm::FlowNetwork shares links (its contract is in flow_network.h).
//
// A transfer is a flow of `bytes` over a path of directed links. Concurrent flows share every
// link's bandwidth max-min fairly (SimGrid's model, solved by progressive filling); rates are
// recomputed whenever flows start or end, once per simulated instant however many flows start
// or end at it, so the next event is "a flow drains", never a packet. A flow's path latency (plus
// any extra latency the caller adds, e.g. a protocol's per-hop software cost) is paid once, after
// its bytes have drained: on_done runs at drain time + latency, and the link is free for others
// from drain time on.
//
// Degraded links: SetLinkBandwidthFactor(link, f) scales a link's bandwidth (0 = down: flows on
// it stall with rate 0 until the factor is raised again).

#include "comm/flow_network.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

namespace trainsim::comm {

namespace {

// Rate recomputation runs after every ordinary event of the same instant, so all flows started
// or finished at one instant are solved together; drains come just before it.
constexpr int kRecomputePriority = 1 << 20;
constexpr int kDrainPriority = (1 << 20) - 1;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
// The solution memo's bound, in entries (an unknown's number, 4 bytes, or its rate, 8 bytes:
// ~24 MiB at most, with the parts of split classes). A training step cycles through a few
// thousand distinct active sets of tens of unknowns (GPT-3 175B on 1,024 H100, TP 4 × PP 8 ×
// DP 32: 1,901 sets, 60 K solves before the memo), so 4 M entries keep all of them; a bigger set
// of sets starts the memo afresh.
constexpr size_t kMemoMaxLinks = size_t{1} << 22;
// The interned classes' bound, in member path entries. Each entry costs ~40 bytes with the
// class's link list and the solver's per-class data (MaxMinSolver::ClassData, ~24 bytes per
// link): 16 M entries ≈ 640 MiB at most. The 16,384-GPU step (GPT-3 175B, TP 4 × PP 8 × DP 512,
// every DP collective as flows) interns ~1,300 classes of ~1,300 links; at 131,072 GPUs a
// ZeRO-2 step with CP 16 (TP 1 × CP 16 × PP 32 × DP 256) cycles through between 8 M and 16 M
// entries of split DP classes (~37 K each): under 4 M or 8 M it started afresh 500 or 250 times
// a step and rebuilt the same splits, 14× the step's CPU (bench/README.md, session 33). A bigger
// set of classes starts afresh (forgetting the solver's per-class data with them).
constexpr size_t kInternMaxLinks = size_t{1} << 24;
// Component labels handed out before they are numbered from 0 again (4 MiB of marks).
constexpr uint32_t kMaxLabels = uint32_t{1} << 20;

// FlowId = (generation << 32) | (slot + 1): no map is needed and ids are never reused.
FlowId MakeId(uint32_t slot, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << 32) | (static_cast<uint64_t>(slot) + 1);
}
uint32_t SlotOf(FlowId id) { return static_cast<uint32_t>((id & 0xffffffffu) - 1); }

}  // namespace

FlowNetwork::FlowNetwork(sim::Engine* engine, const Topology* topology)
    : engine_(engine), topology_(topology) {
  const size_t links = static_cast<size_t>(topology->num_links());
  factor_.assign(links, 1.0);
  capacity_Bps_.resize(links);
  link_users_.assign(links, 0);
  lone_on_link_.assign(links, 0);
  for (size_t l = 0; l < links; ++l) {
    capacity_Bps_[l] = topology->link(static_cast<LinkId>(l)).bandwidth_Bps;
  }
  last_advance_ns_ = engine->now().nanos();
}

FlowId FlowNetwork::StartFlow(const std::vector<LinkId>& path, uint64_t bytes,
                              std::function<void()> on_done, sim::Time extra_latency,
                              bool charge_path_latency) {
  return StartFlow(std::span<const LinkId>(path), bytes, std::move(on_done), extra_latency,
                   charge_path_latency);
}

uint32_t FlowNetwork::NewSlot() {
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  flows_.emplace_back();
  generation_.push_back(0);
  paths_.emplace_back();
  return static_cast<uint32_t>(flows_.size() - 1);
}

FlowId FlowNetwork::StartFlowClass(std::shared_ptr<const FlowClass> flow_class, uint64_t bytes,
                                   std::function<void()> on_done, sim::Time extra_latency) {
  return StartOfClass(std::move(flow_class), bytes, std::move(on_done), nullptr, extra_latency);
}

FlowId FlowNetwork::StartFlowClass(std::shared_ptr<const FlowClass> flow_class, uint64_t bytes,
                                   std::shared_ptr<SharedDone> done, sim::Time extra_latency) {
  assert(done != nullptr && done->pending > 0);
  return StartOfClass(std::move(flow_class), bytes, nullptr, std::move(done), extra_latency);
}

FlowId FlowNetwork::StartFlow(std::span<const LinkId> path, uint64_t bytes,
                              std::function<void()> on_done, sim::Time extra_latency,
                              bool charge_path_latency) {
  return StartOnPath(path, bytes, std::move(on_done), nullptr, extra_latency, charge_path_latency);
}

FlowId FlowNetwork::StartFlow(std::span<const LinkId> path, uint64_t bytes,
                              std::shared_ptr<SharedDone> done, sim::Time extra_latency,
                              bool charge_path_latency) {
  assert(done != nullptr && done->pending > 0);
  return StartOnPath(path, bytes, nullptr, std::move(done), extra_latency, charge_path_latency);
}

FlowId FlowNetwork::StartOfClass(std::shared_ptr<const FlowClass> flow_class, uint64_t bytes,
                                 std::function<void()> on_done, std::shared_ptr<SharedDone> shared,
                                 sim::Time extra_latency) {
  assert(flow_class != nullptr && flow_class->size() > 0);
  if (flow_class->size() == 1) {
    return StartOnPath(flow_class->member(0), bytes, std::move(on_done), std::move(shared),
                       extra_latency, /*charge_path_latency=*/false);
  }
  if (live_watches_ > 0) Touch(SetsOfClass(flow_class) & watched_sets_);
  flows_started_ += flow_class->size();
  return Begin(bytes == 0, bytes, extra_latency, std::move(on_done), {}, std::move(flow_class),
               std::move(shared));
}

FlowId FlowNetwork::StartOnPath(std::span<const LinkId> path, uint64_t bytes,
                                std::function<void()> on_done, std::shared_ptr<SharedDone> shared,
                                sim::Time extra_latency, bool charge_path_latency) {
  if (live_watches_ > 0 && bytes > 0) Touch(SetsOfPath(path) & watched_sets_);
  ++flows_started_;
  sim::Time latency = extra_latency;
  if (charge_path_latency) {
    for (LinkId l : path) latency += topology_->link(l).latency;
  }
  return Begin(path.empty() || bytes == 0, bytes, latency, std::move(on_done), path, nullptr,
               std::move(shared));
}

FlowId FlowNetwork::Begin(bool nothing_to_share, uint64_t bytes, sim::Time latency,
                          std::function<void()> on_done, std::span<const LinkId> path,
                          std::shared_ptr<const FlowClass> flow_class,
                          std::shared_ptr<SharedDone> shared) {
  const uint32_t slot = NewSlot();
  const FlowId id = MakeId(slot, ++generation_[slot]);
  if (nothing_to_share) {
    // Only the latency. The slot is released at once (the id stays unique).
    flows_[slot] = Flow{};
    flows_[slot].id = id;
    free_slots_.push_back(slot);
    if (shared == nullptr) {
      engine_->Schedule(latency, std::move(on_done));
    } else if (--shared->pending == 0) {
      engine_->Schedule(latency, std::move(shared->on_done));
    }
    return id;
  }
  Flow& f = flows_[slot];
  f.id = id;
  f.start_seq = start_seq_++;
  f.active = true;
  f.remaining_bytes = static_cast<double>(bytes);
  f.rate_Bps = 0;
  f.finish_ns = kNever;
  f.delivery_delay_ns = latency.nanos();
  f.on_done = std::move(on_done);
  if (flow_class != nullptr) {
    Interned in = Intern(std::move(flow_class));
    f.cls = std::move(in.cls);
    f.number = in.number;
  } else {
    f.cls = nullptr;
    f.number = InternPath(path);
  }
  f.completion = std::move(shared);
  f.lone = false;
  paths_[slot].assign(path.begin(), path.end());
  // A lone flow it shares a link with joins the solve (with the bytes it has left).
  if (!lone_.empty()) TouchLone(slot);
  const bool lone = GoLone(slot);
  CountUse(slot, 1);
  ++active_count_;
  if (lone) return id;
  MarkFresh(slot);
  active_.push_back(slot);
  RequestRecompute();
  return id;
}

void FlowNetwork::MarkFresh(uint32_t slot) {
  if (label_.size() < flows_.size()) label_.resize(flows_.size(), 0);
  label_[slot] = next_label_++;
  if (fresh_.size() < flows_.size()) fresh_.resize(flows_.size(), 0);
  fresh_[slot] = 1;
  fresh_slots_.push_back(slot);
}

void FlowNetwork::SetLinkBandwidthFactor(LinkId link, double factor) {
  assert(factor >= 0 && std::isfinite(factor));
  if (live_watches_ > 0) Touch(sets_of_link_[size_t(link)] & watched_sets_);
  if (!lone_.empty()) TouchLone(link);
  const size_t l = static_cast<size_t>(link);
  factor_[l] = factor;
  capacity_Bps_[l] = topology_->link(link).bandwidth_Bps * factor;
  ++capacity_version_;
  all_changed_ = true;
  RequestRecompute();
}

FlowNetwork::LinkSetId FlowNetwork::FollowLinks(std::span<const LinkId> links) {
  if (sets_.size() >= size_t(kMaxLinkSets)) return -1;
  if (sets_of_link_.empty()) sets_of_link_.assign(factor_.size(), 0);
  const LinkSetId id = LinkSetId(sets_.size());
  const uint64_t bit = uint64_t(1) << id;
  LinkSet set;
  set.links.assign(links.begin(), links.end());
  set.overlaps = bit;
  for (LinkId l : links) {
    uint64_t& m = sets_of_link_[size_t(l)];
    set.overlaps |= m;
    m |= bit;
  }
  for (uint64_t o = set.overlaps & ~bit; o != 0; o &= o - 1) {
    sets_[size_t(std::countr_zero(o))].overlaps |= bit;
  }
  sets_.push_back(std::move(set));
  // The cached sets of classes miss the new one: count the active flows again.
  sets_of_class_.clear();
  sets_of_number_.clear();
  for (LinkSet& x : sets_) x.users = 0;
  for (uint32_t slot : active_) {
    if (flows_[slot].active) CountSets(slot, 1);
  }
  for (uint32_t slot : lone_) CountSets(slot, 1);
  return id;
}

bool FlowNetwork::LinksFree(LinkSetId set) const {
  const LinkSet& x = sets_[size_t(set)];
  return x.users == 0 && (watched_sets_ & x.overlaps) == 0;
}

FlowNetwork::WatchId FlowNetwork::Watch(LinkSetId set, std::function<void()> on_touch) {
  assert(LinksFree(set));
  uint32_t slot = 0;
  while (slot < watches_.size() && watches_[slot].id != 0) ++slot;
  if (slot == watches_.size()) watches_.emplace_back();
  LinkWatch& w = watches_[slot];
  w.id = ++next_watch_id_;
  w.set = set;
  w.on_touch = std::move(on_touch);
  sets_[size_t(set)].watches++;
  watched_sets_ |= uint64_t(1) << set;
  ++live_watches_;
  return w.id;
}

void FlowNetwork::Unwatch(WatchId id) {
  if (id == 0) return;
  for (LinkWatch& w : watches_) {
    if (w.id != id) continue;
    if (--sets_[size_t(w.set)].watches == 0) watched_sets_ &= ~(uint64_t(1) << w.set);
    w.id = 0;
    w.set = -1;
    w.on_touch = nullptr;
    --live_watches_;
    return;
  }
}

uint64_t FlowNetwork::SetsOfPath(std::span<const LinkId> path) const {
  uint64_t m = 0;
  for (LinkId l : path) m |= sets_of_link_[size_t(l)];
  return m;
}

uint64_t FlowNetwork::SetsOfClass(const std::shared_ptr<const FlowClass>& cls) {
  auto it = sets_of_class_.find(cls.get());
  if (it == sets_of_class_.end()) {
    // Bounded; a class's sets are recomputed the same (the followed sets did not change).
    if (sets_of_class_.size() >= (size_t(1) << 16)) sets_of_class_.clear();
    it = sets_of_class_.emplace(cls.get(), ClassSets{cls, SetsOfPath(cls->links)}).first;
  }
  return it->second.sets;
}

uint64_t FlowNetwork::SetsOf(uint32_t slot) {
  // By interned number (equal numbers, equal links): a split part's sets are asked for at every
  // split, and the number is at hand where the class's address would need a hash look-up.
  const Flow& f = flows_[slot];
  const size_t n = f.number;
  if (n < sets_of_number_.size() && sets_of_number_[n].known) return sets_of_number_[n].sets;
  const uint64_t sets = f.cls != nullptr ? SetsOfPath(f.cls->links) : SetsOfPath(paths_[slot]);
  if (n >= sets_of_number_.size()) sets_of_number_.resize(n + 1);
  sets_of_number_[n] = {sets, true};
  return sets;
}

void FlowNetwork::CountUse(uint32_t slot, int delta) {
  CountLinks(slot, delta);
  CountSets(slot, delta);
}

void FlowNetwork::CountSets(uint32_t slot, int delta) {
  if (sets_.empty()) return;
  Flow& f = flows_[slot];
  // Counted off the sets it was counted on (a class's cached sets may have been dropped).
  if (delta > 0) f.sets = SetsOf(slot);
  for (uint64_t m = f.sets; m != 0; m &= m - 1) {
    sets_[size_t(std::countr_zero(m))].users += uint32_t(delta);
  }
  if (delta < 0) f.sets = 0;
}

void FlowNetwork::Touch(uint64_t sets) {
  if (sets == 0) return;
  fired_.clear();
  for (uint32_t slot = 0; slot < watches_.size(); ++slot) {
    const LinkWatch& w = watches_[slot];
    if (w.id != 0 && (sets >> w.set & 1) != 0) fired_.push_back(slot);
  }
  std::vector<uint32_t> fired;
  fired.swap(fired_);
  FireWatches(&fired);
  fired.swap(fired_);
}

// In slot order (deterministic); each watch ends before its callback runs, so a callback may
// start flows on its own links.
void FlowNetwork::FireWatches(std::vector<uint32_t>* fired) {
  std::vector<std::function<void()>> calls;
  calls.reserve(fired->size());
  for (uint32_t slot : *fired) {
    LinkWatch& w = watches_[slot];
    calls.push_back(std::move(w.on_touch));
    Unwatch(w.id);
  }
  for (auto& call : calls) {
    if (call) call();
  }
}

double FlowNetwork::LinkBandwidthFactor(LinkId link) const {
  return factor_[static_cast<size_t>(link)];
}

double FlowNetwork::FlowRate(FlowId id) const {
  if (id == 0) return 0;
  const uint32_t slot = SlotOf(id);
  if (slot >= flows_.size()) return 0;
  const Flow& f = flows_[slot];
  return (f.id == id && f.active) ? f.rate_Bps : 0;
}

void FlowNetwork::RequestRecompute() {
  if (recompute_pending_) return;
  recompute_pending_ = true;
  engine_->Schedule(
      sim::Time::Zero(), [this] { Recompute(); }, kRecomputePriority);
}

void FlowNetwork::Advance(int64_t now_ns) {
  const int64_t dt_ns = now_ns - last_advance_ns_;
  if (dt_ns <= 0) return;
  const double dt_s = static_cast<double>(dt_ns) * 1e-9;
  for (uint32_t slot : active_) {
    Flow& f = flows_[slot];
    if (!f.active) continue;
    f.remaining_bytes = std::max(0.0, f.remaining_bytes - f.rate_Bps * dt_s);
  }
  last_advance_ns_ = now_ns;
}

void FlowNetwork::Recompute() {
  recompute_pending_ = false;
  ++recomputations_;
  const int64_t now_ns = engine_->now().nanos();
  Advance(now_ns);
  // Drop finished flows from the active list, keeping start order.
  active_.erase(std::remove_if(active_.begin(), active_.end(),
                               [this](uint32_t s) { return !flows_[s].active; }),
                active_.end());
  // (Before the empty set's return too: flows go lone only under memos of today's capacities.)
  if (capacity_version_ != memo_capacity_version_ || interned_links_ > kInternMaxLinks) {
    ClearMemos(/*forget_classes=*/true);
    memo_capacity_version_ = capacity_version_;
  }
  if (active_.empty()) {
    all_changed_ = false;
    ClearFresh();
    ended_labels_.clear();
    ScheduleNextDrain();
    return;
  }
  // A set seen before: its memo (one look-up). Else the components that changed, or the whole
  // set's components.
  key_.clear();
  for (uint32_t slot : active_) key_.push_back(flows_[slot].number);
  const size_t whole = FindMemo(key_);
  split_since_lookup_ = false;
  if (whole != kNoMemo && memos_[whole].parts == kNoParts) {
    const Memo& m = memos_[whole];
    const std::span<const double> r = MemoRates(m);
    rates_.assign(r.begin(), r.end());
    if (m.comps == kNoParts) {
      Relabel({});
    } else {
      Relabel({memo_comps_.data() + m.comps, m.size});
    }
  } else if (all_changed_ || !local_solves_on_ || !SolveChanged()) {
    SolveActive(/*looked_up=*/whole == kNoMemo && !split_since_lookup_);
    Relabel(solved_comps_);
  }
  all_changed_ = false;
  ClearFresh();
  ended_labels_.clear();
  if (next_label_ > kMaxLabels) {  // labels from 0 again (label_mark_ stays this small)
    next_label_ = 0;
    std::fill(label_mark_.begin(), label_mark_.end(), 0);
    solve_mark_ = 0;
    std::vector<uint32_t> comp(active_.size());
    for (size_t i = 0; i < active_.size(); ++i) comp[i] = label_[active_[i]];
    std::vector<uint32_t> sorted = comp;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (uint32_t& c : comp) {
      c = uint32_t(std::lower_bound(sorted.begin(), sorted.end(), c) - sorted.begin());
    }
    Relabel(comp);
  }
  for (size_t i = 0; i < active_.size(); ++i) {
    Flow& f = flows_[active_[i]];
    f.rate_Bps = rates_[i];
    if (f.rate_Bps > 0) {
      const double ns = std::ceil(f.remaining_bytes / f.rate_Bps * 1e9);
      f.finish_ns = ns < 9e18 ? now_ns + static_cast<int64_t>(ns) : kNever;
    } else {
      f.finish_ns = f.remaining_bytes <= 0 ? now_ns : kNever;
    }
  }
  ScheduleNextDrain();
}

void FlowNetwork::ClearMemos(bool forget_classes) {
  ++memo_epoch_;
  memos_.clear();
  memo_block_ = 0;
  memo_block_used_ = 0;
  memo_parts_.clear();
  memo_comps_.clear();
  memo_table_.clear();
  memo_links_ = 0;
  alone_.clear();
  if (!forget_classes) return;
  interned_.clear();
  path_numbers_.clear();
  splits_.clear();
  interned_links_ = 0;
  next_number_ = 0;
  // The solver keeps data per class address: it forgets them here, and every class it may see
  // from now on is interned (kept alive) until the next clear, the active flows' ones included.
  solver_.ForgetClasses();
  sets_of_number_.clear();  // (numbers are dealt again below)
  // (Kept as they are: an equal class interned earlier stays a distinct object.)
  auto renumber = [this](uint32_t slot) {
    Flow& f = flows_[slot];
    if (f.cls != nullptr) {
      f.number = next_number_++;
      interned_.emplace(f.cls->hash, Interned{f.cls, f.number});
      interned_links_ += f.cls->member_links.size();
    } else {
      f.number = InternPath(paths_[slot]);
    }
  };
  for (uint32_t slot : active_) renumber(slot);
  for (uint32_t slot : lone_) renumber(slot);
}

namespace {
uint64_t KeyHash(std::span<const uint32_t> key) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (uint32_t n : key) h = (h ^ n) * 1099511628211ull;
  // splitmix64's finalizer: small numbers leave FNV's high bits alone, and the table buckets
  // by the low ones.
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}
}  // namespace

size_t FlowNetwork::FindMemo(std::span<const uint32_t> key) {
  if (memo_table_.empty()) return kNoMemo;
  const uint64_t h = KeyHash(key);
  const uint64_t tag = h >> 32;
  const size_t mask = memo_table_.size() - 1;
  for (size_t at = h & mask;; at = (at + 1) & mask) {
    const uint64_t e = memo_table_[at];
    if (e == 0) return kNoMemo;
    if ((e >> 32) != tag) continue;
    const Memo& m = memos_[(e & 0xffffffffu) - 1];
    if (m.size == key.size() && std::equal(key.begin(), key.end(), MemoKey(m).begin())) {
      return (e & 0xffffffffu) - 1;
    }
  }
}

size_t FlowNetwork::AddMemo(std::span<const uint32_t> key, std::span<const double> rates,
                            std::span<const ClassParts> parts, std::span<const uint32_t> comps) {
  const size_t entries = 2 * key.size() + comps.size();
  if (memo_links_ + entries > kMemoMaxLinks) ClearMemos(/*forget_classes=*/false);
  memo_links_ += entries;
  const uint32_t n = static_cast<uint32_t>(key.size());
  while (memo_block_ < memo_blocks_.size() &&
         memo_block_used_ + n > memo_blocks_[memo_block_].capacity) {
    ++memo_block_;
    memo_block_used_ = 0;
  }
  if (memo_block_ == memo_blocks_.size()) {
    MemoBlock b;
    b.capacity = std::max(kMemoBlock, n);
    b.keys = std::make_unique<uint32_t[]>(b.capacity);
    b.rates = std::make_unique<double[]>(b.capacity);
    memo_blocks_.push_back(std::move(b));
  }
  Memo m;
  m.block = memo_block_;
  m.offset = memo_block_used_;
  m.size = n;
  memo_block_used_ += n;
  std::copy(key.begin(), key.end(), memo_blocks_[m.block].keys.get() + m.offset);
  std::copy(rates.begin(), rates.end(), memo_blocks_[m.block].rates.get() + m.offset);
  if (!parts.empty()) {
    m.parts = static_cast<uint32_t>(memo_parts_.size());
    memo_parts_.insert(memo_parts_.end(), parts.begin(), parts.end());
  }
  if (!comps.empty()) {
    m.comps = static_cast<uint32_t>(memo_comps_.size());
    memo_comps_.insert(memo_comps_.end(), comps.begin(), comps.end());
  }
  memos_.push_back(m);
  const size_t index = memos_.size() - 1;
  if (2 * memos_.size() > memo_table_.size()) {
    // Grow to twice the size (at least 1,024 slots) and place every memo again.
    std::vector<uint64_t> old;
    old.swap(memo_table_);
    memo_table_.assign(std::max<size_t>(1024, 2 * old.size()), 0);
    const size_t mask = memo_table_.size() - 1;
    for (uint64_t e : old) {
      if (e == 0) continue;
      const Memo& o = memos_[(e & 0xffffffffu) - 1];
      const uint64_t h = KeyHash(MemoKey(o));
      size_t at = h & mask;
      while (memo_table_[at] != 0) at = (at + 1) & mask;
      memo_table_[at] = e;
    }
  }
  const uint64_t h = KeyHash(key);
  const size_t mask = memo_table_.size() - 1;
  size_t at = h & mask;
  while (memo_table_[at] != 0) at = (at + 1) & mask;
  memo_table_[at] = ((h >> 32) << 32) | (index + 1);
  return index;
}

FlowNetwork::Interned FlowNetwork::Intern(std::shared_ptr<const FlowClass> c) {
  auto [first, last] = interned_.equal_range(c->hash);
  // A prepared collective starts the same class object every time: found by address first.
  for (auto it = first; it != last; ++it) {
    if (it->second.cls == c) return it->second;
  }
  for (auto it = first; it != last; ++it) {
    const FlowClass& known = *it->second.cls;
    if (known.member_begin == c->member_begin && known.member_links == c->member_links) {
      return it->second;
    }
  }
  interned_links_ += c->member_links.size();
  Interned in{std::move(c), next_number_++};
  interned_.emplace(in.cls->hash, in);
  return in;
}

uint32_t FlowNetwork::InternPath(std::span<const LinkId> path) {
  uint64_t h = 1469598103934665603ull;
  for (LinkId l : path) h = (h ^ static_cast<uint32_t>(l)) * 1099511628211ull;
  auto [first, last] = path_numbers_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    if (std::equal(path.begin(), path.end(), it->second.first.begin(), it->second.first.end())) {
      return it->second.second;
    }
  }
  interned_links_ += path.size();
  const uint32_t number = next_number_++;
  path_numbers_.emplace(h, std::make_pair(std::vector<LinkId>(path.begin(), path.end()), number));
  return number;
}

void FlowNetwork::SplitLoose(const std::vector<ClassParts>& parts) {
  std::vector<uint32_t> next;
  next.reserve(active_.size() + parts.size());
  for (size_t i = 0; i < active_.size(); ++i) {
    const uint32_t slot = active_[i];
    next.push_back(slot);
    if (i >= parts.size() || parts[i].first.cls == nullptr) continue;
    const uint32_t part = NewSlot();  // may move flows_: no references held across it
    Flow& f = flows_[slot];
    if (f.completion == nullptr) {
      f.completion = std::make_shared<Flow::Completion>();
      f.completion->pending = 1;
      f.completion->on_done = std::move(f.on_done);
      f.on_done = nullptr;
    }
    f.completion->pending++;
    ++class_splits_;
    CountUse(slot, -1);
    f.cls = parts[i].first.cls;
    f.number = parts[i].first.number;
    Flow& p = flows_[part];
    p = Flow{};
    p.id = MakeId(part, ++generation_[part]);
    p.start_seq = f.start_seq;
    p.active = true;
    p.remaining_bytes = f.remaining_bytes;
    p.finish_ns = kNever;
    p.delivery_delay_ns = f.delivery_delay_ns;
    p.cls = parts[i].second.cls;
    p.number = parts[i].second.number;
    p.completion = f.completion;
    paths_[part].clear();
    CountUse(slot, 1);
    CountUse(part, 1);
    if (label_.size() < flows_.size()) label_.resize(flows_.size(), 0);
    if (fresh_.size() < flows_.size()) fresh_.resize(flows_.size(), 0);
    label_[part] = label_[slot];
    fresh_[part] = fresh_[slot];
    if (fresh_[part]) fresh_slots_.push_back(part);
    ++active_count_;
    next.push_back(part);
  }
  active_.swap(next);
}

void FlowNetwork::ScheduleNextDrain() {
  int64_t next = kNever;
  for (uint32_t slot : active_) next = std::min(next, flows_[slot].finish_ns);
  for (uint32_t slot : lone_) next = std::min(next, flows_[slot].finish_ns);
  if (next == drain_event_ns_ && drain_event_ != 0) return;
  if (drain_event_ != 0) engine_->Cancel(drain_event_);
  drain_event_ = 0;
  drain_event_ns_ = -1;
  if (next == kNever) return;
  drain_event_ns_ = next;
  drain_event_ = engine_->ScheduleAt(
      sim::Time::Nanos(next), [this] { OnDrainEvent(); }, kDrainPriority);
}

void FlowNetwork::OnDrainEvent() {
  drain_event_ = 0;
  drain_event_ns_ = -1;
  const int64_t now_ns = engine_->now().nanos();
  Advance(now_ns);
  // Flows drained by now, in start order (active_ is kept in start order), grouped by delivery
  // time; usually they share one.
  done_.clear();
  for (uint32_t slot : active_) {
    const Flow& f = flows_[slot];
    if (f.active && f.finish_ns <= now_ns) done_.emplace_back(now_ns + f.delivery_delay_ns, slot);
  }
  const size_t solved_done = done_.size();
  for (uint32_t slot : lone_) {
    const Flow& f = flows_[slot];
    if (f.finish_ns <= now_ns) done_.emplace_back(now_ns + f.delivery_delay_ns, slot);
  }
  if (done_.size() > solved_done) {
    // Lone flows among them: by time, then start order (a class's parts share theirs and keep
    // their order in active_).
    std::stable_sort(done_.begin(), done_.end(), [this](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first
                                : flows_[a.second].start_seq < flows_[b.second].start_seq;
    });
  } else {
    auto by_time = [](const auto& a, const auto& b) { return a.first < b.first; };
    if (!std::is_sorted(done_.begin(), done_.end(), by_time)) {
      std::stable_sort(done_.begin(), done_.end(), by_time);
    }
  }
  bool solved_ended = false, lone_ended = false;
  size_t i = 0;
  while (i < done_.size()) {
    const int64_t at = done_[i].first;
    // The group's callbacks wait in a pooled vector (no allocation once the pool is warm); the
    // event captures its index, which std::function stores inline.
    uint32_t group;
    if (!free_groups_.empty()) {
      group = free_groups_.back();
      free_groups_.pop_back();
    } else {
      group = uint32_t(groups_.size());
      groups_.emplace_back();
    }
    std::vector<std::function<void()>>* callbacks = &groups_[group];
    for (; i < done_.size() && done_[i].first == at; ++i) {
      const uint32_t slot = done_[i].second;
      Flow& f = flows_[slot];
      if (f.lone) {
        Unlone(slot);
        lone_ended = true;
      } else {
        ended_labels_.push_back(label_[slot]);
        solved_ended = true;
      }
      if (f.completion != nullptr) {
        if (--f.completion->pending == 0) callbacks->push_back(std::move(f.completion->on_done));
        f.completion = nullptr;
      } else {
        callbacks->push_back(std::move(f.on_done));
      }
      f.on_done = nullptr;
      CountUse(slot, -1);
      f.cls = nullptr;
      f.active = false;
      f.rate_Bps = 0;
      --active_count_;
      free_slots_.push_back(slot);
    }
    // Parts of a split class that drain before their last part call nothing back: no event.
    if (callbacks->empty()) {
      free_groups_.push_back(group);
      continue;
    }
    engine_->ScheduleAt(sim::Time::Nanos(at), [this, group] { Deliver(group); });
  }
  // Compact now: a freed slot may be reused by a flow started before the next recompute.
  active_.erase(std::remove_if(active_.begin(), active_.end(),
                               [this](uint32_t s) { return !flows_[s].active; }),
                active_.end());
  if (lone_ended) {
    lone_.erase(std::remove_if(lone_.begin(), lone_.end(),
                               [this](uint32_t s) { return !flows_[s].active; }),
                lone_.end());
  }
  // Lone flows shared no link with another: nothing to solve again when only they ended.
  if (solved_ended) {
    RequestRecompute();
  } else {
    ScheduleNextDrain();
  }
}

void FlowNetwork::Deliver(uint32_t group) {
  // Moved out first: a callback may end flows whose delivery takes a pooled vector.
  std::vector<std::function<void()>> callbacks = std::move(groups_[group]);
  for (auto& cb : callbacks) {
    if (cb) cb();
  }
  callbacks.clear();
  groups_[group] = std::move(callbacks);  // (keeps its capacity for the next group)
  free_groups_.push_back(group);
}

std::vector<double> MaxMinFairRates(const Topology& topology,
                                    const std::vector<std::vector<LinkId>>& paths,
                                    const std::vector<double>& factor) {
  std::vector<double> capacity(static_cast<size_t>(topology.num_links()));
  for (size_t l = 0; l < capacity.size(); ++l) {
    capacity[l] =
        topology.link(static_cast<LinkId>(l)).bandwidth_Bps * (factor.empty() ? 1.0 : factor[l]);
  }
  std::vector<std::span<const LinkId>> spans(paths.begin(), paths.end());
  std::vector<double> rates;
  MaxMinSolver solver;
  solver.Solve(spans, capacity, &rates);
  return rates;
}

}  // namespace trainsim::comm
