// comm::FlowNetwork — flow-level bandwidth sharing on the event engine.
//
// A transfer is a flow of `bytes` over a path of directed links. Concurrent flows share every
// link's bandwidth max-min fairly (SimGrid's model, progressive filling); rates are recomputed
// once per simulated instant at which flows start or end (only for the connected components that
// changed, comm/flow_solve.cc), so the next event is "a flow drains", never a packet. A flow's path
// latency (plus any extra the caller adds) is paid once, after its bytes have drained.
// SetLinkBandwidthFactor(link, f) scales a link (0 = down: its flows stall).
// A flow (or class) that starts on links no other flow crosses, and whose rate alone has been
// solved before, drains "lone": at that rate, outside the solve, with no recomputation at its
// start or end. It joins the solve, with the bytes it has left, the moment another flow starts
// on one of its links or one of their capacities changes. Its rate alone is the max-min rate
// (the same memo), so completions are those of the full solve up to the engine's 1 ns tick
// (the full solve re-rounds a drain time at every recomputation; a lone flow's is rounded once).
//
// Invariants: on_done runs exactly once per flow, through the engine (never inside StartFlow), at
// drain time + latency; flows that finish at the same instant call back in start order; rates
// are always the max-min fair allocation of the active flows; no pointer or hash ordering feeds
// any decision, so runs are deterministic.
// Lifetime: the network schedules events that refer to it; destroy it only when the engine will
// not run again (or has no events left), as with any object that schedules on the engine.
#ifndef TRAINSIM_COMM_FLOW_NETWORK_H_
#define TRAINSIM_COMM_FLOW_NETWORK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "comm/max_min.h"
#include "comm/topology.h"
#include "sim/engine.h"
#include "sim/time.h"

namespace trainsim::comm {

using FlowId = uint64_t;  // 0 is never a valid id; unique within one FlowNetwork

class FlowNetwork {
 public:
  // Neither pointer is owned; both must outlive the FlowNetwork.
  FlowNetwork(sim::Engine* engine, const Topology* topology);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Starts a flow now. An empty path or 0 bytes completes after the latency alone. With
  // charge_path_latency = false only extra_latency is added (for callers that account latency
  // themselves, like the collectives, which charge NCCL's end-to-end hop latencies).
  FlowId StartFlow(const std::vector<LinkId>& path, uint64_t bytes, std::function<void()> on_done,
                   sim::Time extra_latency = sim::Time::Zero(), bool charge_path_latency = true);
  FlowId StartFlow(std::span<const LinkId> path, uint64_t bytes, std::function<void()> on_done,
                   sim::Time extra_latency = sim::Time::Zero(), bool charge_path_latency = true);
  // Starts a class of flows now, one per member of `flow_class`, each of `bytes`: solved as one
  // unknown while its members share a rate (max_min.h), split where they would not. on_done runs
  // once, extra_latency after the last member has drained (no path latency is charged).
  // REQUIRES: every member path is non-empty. Counts as flow_class->size() flows started.
  FlowId StartFlowClass(std::shared_ptr<const FlowClass> flow_class, uint64_t bytes,
                        std::function<void()> on_done, sim::Time extra_latency = sim::Time::Zero());
  // One callback for several flows (a schedule's segment): `on_done` runs once, through the
  // engine, when the last of them has drained, after that flow's latency, where each flow's own
  // callback would have run; the flows that drain before it schedule no event. Made with
  // `pending` = the number of flows (or classes) that will be started with it.
  struct SharedDone {
    size_t pending = 0;
    std::function<void()> on_done;
  };
  FlowId StartFlow(std::span<const LinkId> path, uint64_t bytes, std::shared_ptr<SharedDone> done,
                   sim::Time extra_latency, bool charge_path_latency);
  FlowId StartFlowClass(std::shared_ptr<const FlowClass> flow_class, uint64_t bytes,
                        std::shared_ptr<SharedDone> done,
                        sim::Time extra_latency = sim::Time::Zero());

  // Scales link bandwidth; factor >= 0 (0 = down). Takes effect at the current instant.
  void SetLinkBandwidthFactor(LinkId link, double factor);
  double LinkBandwidthFactor(LinkId link) const;
  // Every link's current capacity (bandwidth × factor), bytes/s, indexed by LinkId.
  const std::vector<double>& LinkCapacities() const { return capacity_Bps_; }

  // Current rate of an active flow (of each member of a class; of its first part once split) in
  // bytes/s (0 if it is not draining, e.g. finished). Rates reflect flows started at this
  // instant only once the engine has processed the instant.
  double FlowRate(FlowId id) const;
  size_t active_flows() const { return active_count_; }
  uint64_t flows_started() const { return flows_started_; }
  uint64_t rate_recomputations() const { return recomputations_; }
  // Recomputations that re-solved only the components that changed (the others keep their
  // rates; the same rates as solving the whole set). On by default; off for comparisons.
  uint64_t local_solves() const { return local_solves_; }
  void set_local_solves(bool on) { local_solves_on_ = on; }
  // Flows (classes count once) that started lone, outside the solve (some join it later, when
  // touched). On by default; off for comparisons.
  uint64_t lone_flows() const { return lone_flows_; }
  void set_lone_flows(bool on) { lone_on_ = on; }

  sim::Engine* engine() const { return engine_; }
  const Topology& topology() const { return *topology_; }

  // Followed link sets and watches, for a caller that times traffic of its own on some links
  // without flows while nothing else crosses them (the step simulation's queued gradient
  // buckets) and must learn the moment that stops. FollowLinks(links) names a set of links
  // (at most kMaxLinkSets per network; -1 past that): from then on the network counts the
  // active flows that cross it, so LinksFree(set) costs O(1) and a flow's start, split and end
  // a few operations more. Watch(set, on_touch) calls on_touch once, synchronously, when a flow
  // or a member of a class is about to start on one of the set's links, or one of their
  // bandwidth factors is about to change — before the network changes anything, so on_touch
  // may start flows of its own at this instant, ahead of the one that touched. The watch ends
  // when it fires or at Unwatch.
  static constexpr int kMaxLinkSets = 64;
  using LinkSetId = int;
  LinkSetId FollowLinks(std::span<const LinkId> links);
  // Whether no active flow (or member of an active class) crosses the set, and no watch holds
  // a set that shares a link with it. REQUIRES: `set` from FollowLinks.
  bool LinksFree(LinkSetId set) const;
  using WatchId = uint64_t;  // 0 is never a valid id
  // REQUIRES: LinksFree(set).
  WatchId Watch(LinkSetId set, std::function<void()> on_touch);
  void Unwatch(WatchId id);  // no-op for a watch that has fired or ended
  // Classes split since construction (members that would not share one rate).
  uint64_t class_splits() const { return class_splits_; }

 private:
  struct Flow {
    FlowId id = 0;
    uint64_t start_seq = 0;  // start order, for deterministic callback order
    bool active = false;
    double remaining_bytes = 0;
    double rate_Bps = 0;
    int64_t finish_ns = 0;  // drain time at the current rate; INT64_MAX when stalled
    int64_t delivery_delay_ns = 0;
    std::function<void()> on_done;
    std::shared_ptr<const FlowClass> cls;  // null: one flow, its path in paths_[slot]
    uint32_t number = 0;  // the interned number of cls, or of the path (Interned, InternPath)
    uint64_t sets = 0;    // the followed sets it is counted on (CountUse)
    // Draining outside the solve (lone_) since lone_since_ns, with remaining_bytes then.
    bool lone = false;
    int64_t lone_since_ns = 0;
    uint32_t big_at = 0;  // its index in big_, when it has more than kLoneLinks links
    // A class split into parts (members that would get different rates), or flows started
    // with a SharedDone: they share the callback, which runs after the last of them.
    using Completion = SharedDone;
    std::shared_ptr<Completion> completion;
  };

  void RequestRecompute();
  void Recompute();  // advance, solve max-min, schedule the next drain
  // Recompute's solve of the whole active set into rates_ (per entry of active_), splitting
  // classes whose members would not share a rate; looked_up: key_ is the set's and has no memo.
  void SolveActive(bool looked_up);
  // The rates of the components that changed since the last solve, the others' kept: the
  // components of the flows that ended, and those that the flows started since then join (with
  // the new flows). Each is found or solved by its numbers as SolveActive would (the same key,
  // so the same rates), into rates_; true. False when the changes cannot be solved locally
  // (classes still split after many rounds): the active set may hold split classes' parts.
  bool SolveChanged();
  // Every active flow's component label (label_) from `comp` (per entry of active_, numbered
  // from 0; empty: all one component).
  void Relabel(std::span<const uint32_t> comp);
  void OnDrainEvent();           // completes every flow whose drain time has come
  void Deliver(uint32_t group);  // runs a group's callbacks (groups_) and frees the group
  void Advance(int64_t now_ns);
  void ScheduleNextDrain();
  uint32_t NewSlot();
  // StartFlow and StartFlowClass, with either their own callback or a shared one (the other
  // empty): watches touched, flows counted, the path's latency.
  FlowId StartOnPath(std::span<const LinkId> path, uint64_t bytes, std::function<void()> on_done,
                     std::shared_ptr<SharedDone> shared, sim::Time extra_latency,
                     bool charge_path_latency);
  FlowId StartOfClass(std::shared_ptr<const FlowClass> flow_class, uint64_t bytes,
                      std::function<void()> on_done, std::shared_ptr<SharedDone> shared,
                      sim::Time extra_latency);
  // StartOnPath and StartOfClass after their own bookkeeping: a slot, and either a delivery
  // after `latency` alone (nothing_to_share) or an active flow on `path` or of `flow_class`.
  FlowId Begin(bool nothing_to_share, uint64_t bytes, sim::Time latency,
               std::function<void()> on_done, std::span<const LinkId> path,
               std::shared_ptr<const FlowClass> flow_class, std::shared_ptr<SharedDone> shared);
  // An interned class and its number: dense from 0 in order of interning, until the interned
  // classes are forgotten (ClearMemos); the solver caches which pairs of classes meet by number.
  struct Interned {
    std::shared_ptr<const FlowClass> cls;
    uint32_t number = 0;
  };
  // A class split in two: the members held at its rate, and the `loose` ones (max_min.h).
  using ClassParts = std::pair<Interned, Interned>;
  ClassParts SplitClass(const FlowClass& whole, uint32_t number,
                        const std::vector<uint32_t>& loose);
  // Replaces each class of active_[i] that has parts[i] by the two parts (the second right after
  // the first in active_), sharing one completion.
  void SplitLoose(const std::vector<ClassParts>& parts);
  // The one object of each distinct class (by member paths), so the memo keys classes by address.
  Interned Intern(std::shared_ptr<const FlowClass> c);
  // A single flow's path's number (from the same sequence as the classes').
  uint32_t InternPath(std::span<const LinkId> path);

  // Fires (and ends) the watches on the sets in `sets`.
  void Touch(uint64_t sets);
  void FireWatches(std::vector<uint32_t>* fired);
  // The followed sets the slot's flow (or class) crosses; a class's is cached per class.
  uint64_t SetsOfPath(std::span<const LinkId> path) const;
  uint64_t SetsOfClass(const std::shared_ptr<const FlowClass>& cls);
  uint64_t SetsOf(uint32_t slot);
  // ± 1 on each followed set the slot's flow crosses (CountSets) and on its links (CountLinks).
  void CountUse(uint32_t slot, int delta);
  void CountSets(uint32_t slot, int delta);
  void CountLinks(uint32_t slot, int delta);
  // Lone flows (the contract above). GoLone: whether the new flow in `slot` may drain lone (no
  // other flow, solved or lone, shares a link with it), and if so makes it so. JoinSolve: a
  // lone flow joins the solve now, with the bytes it has left. TouchLone: every lone flow that
  // shares a link with the new flow in `slot`, or that crosses `link`, joins the solve.
  // Flows of at most kLoneLinks links are counted per link (link_users_, lone_on_link_); longer
  // ones (a collective over many nodes) are listed in big_ and met pair by pair (the solver's
  // cached Meets by number), and never drain lone.
  static constexpr size_t kLoneLinks = 32;
  bool GoLone(uint32_t slot);
  void JoinSolve(uint32_t slot);
  void TouchLone(uint32_t slot);
  void TouchLone(LinkId link);
  void Unlone(uint32_t slot);  // clears lone_on_link_ of its links
  ClassView ViewOf(uint32_t slot) const {
    const Flow& f = flows_[slot];
    if (const FlowClass* c = f.cls.get()) return {c->links, c->counts, c, f.number};
    return {paths_[slot], {}, nullptr, f.number};
  }
  bool lone_on_ = true;
  uint64_t lone_flows_ = 0;
  std::vector<uint32_t> lone_;        // lone slots in start order
  std::vector<uint32_t> link_users_;  // per link: active slots of ≤ kLoneLinks links crossing it
  std::vector<uint32_t> lone_on_link_;  // per link: 1 + the lone slot crossing it; 0: none
  std::vector<uint32_t> big_;           // active slots of more than kLoneLinks links

  sim::Engine* engine_;
  const Topology* topology_;
  // Followed sets: per link, the sets holding it (bit i: set i); per set its links, the sets
  // it shares a link with (itself included), the active flows crossing it, its live watches.
  struct LinkSet {
    std::vector<LinkId> links;
    uint64_t overlaps = 0;
    uint32_t users = 0;
    uint32_t watches = 0;
  };
  std::vector<LinkSet> sets_;
  std::vector<uint64_t> sets_of_link_;  // empty until the first FollowLinks
  uint64_t watched_sets_ = 0;           // sets with a live watch
  struct ClassSets {
    std::shared_ptr<const FlowClass> keep;  // the key's class, alive while cached
    uint64_t sets = 0;
  };
  std::unordered_map<const FlowClass*, ClassSets> sets_of_class_;  // (StartFlowClass's Touch)
  struct NumberSets {
    uint64_t sets = 0;
    bool known = false;
  };
  std::vector<NumberSets> sets_of_number_;  // SetsOf's, per interned number
  struct LinkWatch {
    WatchId id = 0;
    LinkSetId set = -1;
    std::function<void()> on_touch;
  };
  std::vector<LinkWatch> watches_;  // slots; id == 0: free
  size_t live_watches_ = 0;
  uint64_t next_watch_id_ = 0;
  std::vector<uint32_t> fired_;  // Touch's scratch
  uint64_t class_splits_ = 0;
  std::vector<double> factor_;
  std::vector<double> capacity_Bps_;  // link bandwidth × factor

  std::vector<Flow> flows_;  // slots
  std::vector<uint32_t> generation_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint32_t> active_;            // active slots in start order
  std::vector<std::vector<LinkId>> paths_;  // per slot, capacity reused
  size_t active_count_ = 0;
  uint64_t flows_started_ = 0;
  uint64_t start_seq_ = 0;
  int64_t last_advance_ns_ = 0;
  bool recompute_pending_ = false;
  sim::EventId drain_event_ = 0;
  int64_t drain_event_ns_ = -1;
  uint64_t recomputations_ = 0;
  uint64_t local_solves_ = 0;
  bool local_solves_on_ = true;

  std::vector<std::pair<int64_t, uint32_t>> done_;  // (delivery ns, slot) scratch
  // Callbacks of flows delivered at one instant, waiting for it (OnDrainEvent, Deliver).
  std::vector<std::vector<std::function<void()>>> groups_;
  std::vector<uint32_t> free_groups_;
  // Incremental solves (SolveChanged): per slot, the label of the connected component an active
  // flow was in at the last solve; the labels of the flows that ended since; the flows started
  // since; whether everything changed (a capacity).
  std::vector<uint32_t> label_;
  uint32_t next_label_ = 0;
  std::vector<uint32_t> solved_comps_;  // SolveActive's: the components of its solution
  bool split_since_lookup_ = false;     // SolveChanged split classes after Recompute's look-up
  std::vector<uint32_t> ended_labels_;
  std::vector<uint8_t> fresh_;         // per slot: started (or split) since the last solve
  std::vector<uint32_t> fresh_slots_;  // the slots fresh_ marks
  void ClearFresh();
  void MarkFresh(uint32_t slot);  // a new label, fresh: for the next solve to take in
  bool all_changed_ = false;
  // SolveChanged's scratch: per label, the solve that marked it affected; per active entry,
  // whether it is; the affected entries and their union-find.
  std::vector<uint32_t> label_mark_;
  uint32_t solve_mark_ = 0;
  std::vector<uint8_t> affected_;
  std::vector<uint32_t> aff_index_, aff_parent_, aff_comp_;
  std::vector<uint32_t> view_made_;  // per active entry: the round solver_views_ holds it for
  uint32_t view_round_ = 0;
  // Memo of max-min solutions: the same unknowns in the same order under the same capacities
  // give the same rates, so a solution is reused whenever an active set, or one of its connected
  // components, recurs — every step of a ring, and in a training step the few thousand distinct
  // sets (bucket k of a stage alone, with a pipeline send, ...) that its tens of thousands of
  // flow starts and ends cycle through. Keyed by the unknowns' interned numbers (equal numbers,
  // equal classes or paths); cleared when a capacity changes or when it holds more than
  // kMemoMaxLinks entries, and with the interned classes when those hold more than
  // kInternMaxLinks member path entries.
  // A memo's numbers and rates lie in one block of memo_blocks_ (`size` of each from
  // `offset`), its parts (when a class splits) in memo_parts_ from `parts`: no allocation per
  // memo, and the index below is one flat table, so a lookup touches ~3 cache lines (a step
  // makes ~10^5 of them; the node-based multimap and per-memo vectors were half of Recompute).
  struct Memo {
    uint32_t block = 0;
    uint32_t offset = 0;
    uint32_t size = 0;
    uint32_t parts = kNoParts;  // kNoParts: exact (no class splits)
    // A whole set's memo: its unknowns' connected components (memo_comps_ from `comps`,
    // numbered by first unknown); kNoParts: one component.
    uint32_t comps = kNoParts;
  };
  static constexpr uint32_t kNoParts = UINT32_MAX;
  static constexpr size_t kNoMemo = SIZE_MAX;
  size_t FindMemo(std::span<const uint32_t> key);  // kNoMemo: none
  // Adds the memo of `key` with `rates` and, when not empty, `parts` (per unknown); may clear
  // the memo first. Returns its index. The spans must not point into the memo's own storage.
  size_t AddMemo(std::span<const uint32_t> key, std::span<const double> rates,
                 std::span<const ClassParts> parts, std::span<const uint32_t> comps = {});
  std::span<const uint32_t> MemoKey(const Memo& m) const {
    return {memo_blocks_[m.block].keys.get() + m.offset, m.size};
  }
  std::span<const double> MemoRates(const Memo& m) const {
    return {memo_blocks_[m.block].rates.get() + m.offset, m.size};
  }
  // The memo of the whole active set (key_ set) from its components', added (comp_ set to
  // its components).
  size_t SolveByComponents();
  // The memo of the active flows active_[idx[j]] (one connected component; empty idx: all of
  // them), solving and adding it when it is new. solver_views_ and key_ are set. The index stays
  // valid until the next call (which may clear the memo).
  size_t FindOrSolve(std::span<const uint32_t> idx);
  // forget_classes: the interned classes and the solver's per-class data too.
  void ClearMemos(bool forget_classes);
  std::vector<Memo> memos_;
  // Bumped by every ClearMemos: a memo index kept across calls is valid only in its epoch.
  uint64_t memo_epoch_ = 0;
  // Per component of the solver's last Components call: its memo and that memo's epoch. A
  // component that is the same as then (MaxMinSolver::SameAsLast) reuses it without a look-up.
  struct CompMemo {
    size_t memo = kNoMemo;
    uint64_t epoch = 0;
  };
  std::vector<CompMemo> comp_memo_, next_comp_memo_;
  // Blocks of kMemoBlock numbers and rates (one of its own for a longer key), filled in order
  // and kept when the memo is cleared: no copying as the memo grows, and heap-sized pieces.
  struct MemoBlock {
    std::unique_ptr<uint32_t[]> keys;
    std::unique_ptr<double[]> rates;
    uint32_t capacity = 0;
  };
  static constexpr uint32_t kMemoBlock = 4096;
  std::vector<MemoBlock> memo_blocks_;
  uint32_t memo_block_ = 0;       // the block being filled
  uint32_t memo_block_used_ = 0;  // its entries in use
  std::vector<ClassParts> memo_parts_;
  std::vector<uint32_t> memo_comps_;
  // Open addressing, linear probing, a power of two at most half full, placed by the key
  // hash's low bits: per slot (the hash's high 32 bits << 32) | (memos_ index + 1), 0 empty;
  // the numbers are compared only where the high bits match.
  std::vector<uint64_t> memo_table_;
  size_t memo_links_ = 0;      // Σ 2 · key.size() over memos_ (numbers and rates)
  size_t interned_links_ = 0;  // Σ member_links.size() over interned_, + the paths'
  uint64_t capacity_version_ = 0;
  uint64_t memo_capacity_version_ = ~uint64_t{0};
  std::vector<uint32_t> key_, comp_key_;                  // the active set's numbers; a component's
  std::unordered_multimap<uint64_t, Interned> interned_;  // by FlowClass::hash
  std::unordered_multimap<uint64_t, std::pair<std::vector<LinkId>, uint32_t>> path_numbers_;
  uint32_t next_number_ = 0;
  // Per interned number: 1 + the memo of the class or path alone (0: none yet). Most components
  // are one class (a stage's bucket wave, sharing no link with the other stages' traffic).
  std::vector<uint32_t> alone_;
  MaxMinSolver solver_;
  std::vector<ClassView> solver_views_;  // per entry of active_
  std::vector<ClassView> comp_views_;    // one component's
  // Recompute's scratch: per entry of active_ its component and its rate; the entries of each
  // component (comp_index_[comp_begin_[k] .. comp_begin_[k + 1])).
  std::vector<uint32_t> comp_, comp_begin_, comp_cursor_, comp_index_;
  std::vector<double> rates_;
  std::vector<ClassParts> split_;  // Recompute's: the parts of a memo that splits classes
  // SolveByComponents' and FindOrSolve's scratch.
  std::vector<double> whole_rates_, solve_rates_;
  std::vector<ClassParts> whole_parts_, solve_parts_;
  std::vector<std::vector<uint32_t>> loose_;
  // SplitClass's results by (the whole class's number, the loose members): a class splits the
  // same way in every set where the same members are loose, and building the parts (sorting
  // their links, interning) costs more than the solve. Forgotten with the interned classes.
  struct Split {
    uint32_t number = 0;
    std::vector<uint32_t> loose;
    Interned kept, split;  // (not a ClassParts: std::pair of a type still being defined)
  };
  std::unordered_multimap<uint64_t, Split> splits_;
  std::vector<uint32_t> split_crossings_;  // SplitClass's scratch for SplitFlowClass (zeroed)
};

// Max-min fair rates (bytes/s) of a static set of flows, all present at once, over the
// topology's links scaled by `factor` (empty = all 1). The same progressive filling as
// FlowNetwork; used by closed-form estimates of one stage of a collective.
std::vector<double> MaxMinFairRates(const Topology& topology,
                                    const std::vector<std::vector<LinkId>>& paths,
                                    const std::vector<double>& factor = {});

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_FLOW_NETWORK_H_
