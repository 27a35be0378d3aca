// comm::MaxMinSolver — max-min fair rates by progressive filling (internal to comm/).
//
// Given flows (each a path of links) and link capacities, every flow gets the largest rate such
// that no link is over capacity and no flow could gain without taking from a flow with a smaller
// or equal rate. Progressive filling with a heap of per-link fair shares (capacity left ÷ flows
// not yet frozen): pop the smallest share, freeze that link's unfrozen flows at it, subtract
// them from the other links on their paths. O(P log L) for P path entries over L links.
//
// Flow classes (SolveClasses): flows symmetric by construction (a ring step's network legs on
// every rank of a group) are one unknown with a multiplicity: a link's load is Σ over classes
// of (members crossing it) × the class's rate, and filling freezes a whole class at once. That
// equals the per-flow solution exactly when every member would get the same rate, i.e. when
// every member has a bottleneck — a saturated link on which no flow gets more — at the class's
// rate. The solver checks that for every member and reports the members that have none
// ("loose"); the caller splits them off into a class of their own and solves again, so the
// result is always the per-flow max-min solution (docs/step-simulation.md, "Flow classes").
//
// Reduced solves (SolveInterned): a class of a few hundred members crosses thousands of links,
// but only two kinds matter to the filling: links another unknown also crosses ("shared"), and
// the class's private link of smallest capacity ÷ crossings (its private bound: a link only one
// class crosses has a constant share until that class freezes, so only its smallest can ever
// freeze it). SolveInterned keeps, per class, its links sorted by that ratio and, per pair of
// classes, their shared links (both depend only on the classes and the capacities, so they are
// computed once), and fills over the shared links plus one virtual link per class carrying its
// private bound: the same filling steps, the same rates, in time proportional to the shared
// links instead of every crossing. The exactness check is the same; for a class at its
// standalone bound whose every member crosses a link at that bound it needs no member walk.
//
// Invariants: deterministic (ties between equal shares broken by link id); a link of capacity 0
// freezes its flows at rate 0; scratch memory is reused between calls.
#ifndef TRAINSIM_COMM_MAX_MIN_H_
#define TRAINSIM_COMM_MAX_MIN_H_

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "comm/topology.h"

namespace trainsim::comm {

// Member paths of a class of flows that start together with the same bytes. Immutable; shared
// by every run of a prepared collective.
struct FlowClass {
  std::vector<LinkId> member_links;    // member paths, concatenated
  std::vector<uint32_t> member_begin;  // size() + 1 offsets into member_links
  std::vector<LinkId> links;           // links any member crosses, ascending
  std::vector<uint32_t> counts;        // per entry of links: member crossings of that link
  uint64_t hash = 0;  // FNV-1a over member_begin and member_links (equal classes, equal hashes)
  size_t size() const { return member_begin.empty() ? 0 : member_begin.size() - 1; }
  std::span<const LinkId> member(size_t i) const {
    return std::span<const LinkId>(member_links)
        .subspan(member_begin[i], member_begin[i + 1] - member_begin[i]);
  }
};
// REQUIRES: at least one member.
std::shared_ptr<const FlowClass> MakeFlowClass(const std::vector<std::span<const LinkId>>& members);
// The two parts of `whole`: its members not in `loose`, and those in `loose` (ascending member
// indices), each equal to what MakeFlowClass builds from its members, but without sorting
// links: a part's links are those of the whole's (ascending) that its members cross, counted in
// `scratch` (indexed by LinkId; all zero on entry and on return). Linear in the whole's links
// and member links, where MakeFlowClass sorts every part's (a DP class split at 131,072 GPUs
// has tens of thousands). REQUIRES: 0 < loose.size() < whole.size(), every index below
// whole.size(), the whole's links non-negative.
std::pair<std::shared_ptr<const FlowClass>, std::shared_ptr<const FlowClass>> SplitFlowClass(
    const FlowClass& whole, std::span<const uint32_t> loose, std::vector<uint32_t>* scratch);

// One unknown of SolveClasses: a single flow (members == nullptr: `links` is its path) or a
// class (links/counts = its aggregated links, members for the exactness check).
struct ClassView {
  std::span<const LinkId> links;
  std::span<const uint32_t> counts;  // empty: 1 per entry of links
  const FlowClass* members = nullptr;
  // The caller's dense number for the unknown (FlowNetwork's interned number of the class or of
  // the single flow's path), with which Components caches which pairs meet; kNoNumber: classes
  // numbered by address, single flows compared afresh. Numbers stand for the same links until
  // ForgetClasses(); either every unknown seen between two ForgetClasses() carries one or none.
  static constexpr uint32_t kNoNumber = UINT32_MAX;
  uint32_t number = kNoNumber;
};

class MaxMinSolver {
 public:
  // paths[f]: links of flow f; capacity_Bps[l]: capacity of link l (indexed by LinkId).
  // Writes rates (bytes/s) into *rates (resized to paths.size()).
  void Solve(const std::vector<std::span<const LinkId>>& paths,
             const std::vector<double>& capacity_Bps, std::vector<double>* rates);

  // Rates per class (each member's rate) into *rates; (*loose)[c]: the members of class c that
  // have no bottleneck at its rate, ascending (empty for every class iff the solution is the
  // per-flow max-min solution).
  void SolveClasses(const std::vector<ClassView>& classes, const std::vector<double>& capacity_Bps,
                    std::vector<double>* rates, std::vector<std::vector<uint32_t>>* loose);

  // SolveClasses, reduced (above) and with the same result up to the order of equal shares
  // (rates equal within rounding). REQUIRES: every class view's links/counts are its members'
  // (c.links, c.counts of *c.members), and every class and `capacity_Bps` stay unchanged until
  // ForgetClasses() — the solver keeps data per class address (FlowNetwork interns its classes
  // and forgets them whenever a capacity changes).
  void SolveInterned(const std::vector<ClassView>& classes, const std::vector<double>& capacity_Bps,
                     std::vector<double>* rates, std::vector<std::vector<uint32_t>>* loose);
  void ForgetClasses();
  // Connected components of `views` (two unknowns are connected when they cross a common link):
  // (*comp)[i] is view i's component, numbered in order of first appearance; returns their
  // number. Max-min filling runs in each component on its own, so solving each alone gives the
  // same rates. Same REQUIRES as SolveInterned for the classes (it keeps which pairs meet per
  // class address); `num_links`: every link id is below it.
  size_t Components(const std::vector<ClassView>& views, size_t num_links,
                    std::vector<uint32_t>* comp);
  // After a Components call on numbered views: per component, the index of the previous call's
  // component with exactly the same views (the same numbers in the same order: its solution
  // can be reused as it was), or kNotBefore.
  static constexpr uint32_t kNotBefore = UINT32_MAX;
  // Whether two numbered unknowns cross a common link (cached by number, as for Components).
  // Same REQUIRES as Components.
  bool Meets(const ClassView& a, const ClassView& b) { return Meet(a, a.number, b, b.number); }
  const std::vector<uint32_t>& SameAsLast() const { return same_as_last_; }

 private:
  // Per class, for the capacities it was first seen with.
  struct ClassData {
    std::vector<double> link_ratio;    // per entry of links: capacity ÷ crossings
    double bound = 0;                  // the smallest link_ratio: the class's rate alone
    std::vector<uint32_t> at_bound;    // the entries of links whose ratio is the bound
    bool members_at_bound = false;     // every member crosses a link at that ratio
    std::vector<double> member_ratio;  // per entry of member_links: its link's ratio
  };
  // Links two classes share, with each one's crossings of them.
  struct Shared {
    std::vector<LinkId> links;
    std::vector<uint32_t> counts_first, counts_second;  // of the pair's first and second class
  };
  struct PairHash {
    size_t operator()(const std::pair<const FlowClass*, const FlowClass*>& p) const;
  };
  const ClassData& DataOf(const FlowClass* c, const std::vector<double>& capacity_Bps);
  bool SmallestOwnRatio(const FlowClass* c, const ClassData& d, uint32_t tag, double* ratio) const;
  // The pair's Shared, and whether `a` is its first class.
  std::pair<const Shared*, bool> SharedLinks(const FlowClass* a, const FlowClass* b);
  // Counts, capacities and classes per link over `views` (links >= capacity_Bps.size() are
  // virtual: capacity virtual_cap_[l - capacity_Bps.size()]); then the filling.
  void SetUpAndFill(const std::vector<ClassView>& views, const std::vector<double>& capacity_Bps,
                    std::vector<double>* rates);
  void EnsureLinks(size_t num_links);
  void FillByScan(const std::vector<ClassView>& classes, std::vector<double>* rates);
  void FillByHeap(const std::vector<ClassView>& classes, std::vector<double>* rates);
  template <typename FreezeFn>
  void FillByHeapWith(std::vector<double>* rates, FreezeFn freeze);
  void Freeze(const ClassView& c, double share);

  std::vector<double> cap_;
  std::vector<int32_t> count_;
  std::vector<uint32_t> begin_;
  std::vector<uint32_t> cursor_;
  std::vector<uint32_t> members_;
  std::vector<LinkId> touched_;
  std::vector<uint8_t> frozen_;
  std::vector<double> top_;  // per link: the largest rate frozen on it (SolveClasses)
  // Whether two numbered unknowns cross a common link (Components), by number: meets_[a][b]
  // for b < a: 0 not known yet, 1 no, 2 yes.
  bool Meet(const ClassView& a, uint32_t number_a, const ClassView& b, uint32_t number_b);
  // Numbers the union-find's components by first unknown into *comp; returns their count.
  size_t Number(size_t n, std::vector<uint32_t>* comp);
  uint32_t ClassNumber(const FlowClass* c);
  std::unordered_map<const FlowClass*, uint32_t> class_number_;
  std::vector<std::vector<uint8_t>> meets_;
  std::unordered_map<uint64_t, bool> far_meets_;  // pairs with a number past meets_' reach
  std::vector<uint32_t> parent_;                  // Components' union-find
  // The numbered views of the last Components call and their components, from which the next
  // call starts (ComponentsFromLast); cleared by ForgetClasses (numbers change meaning).
  std::vector<uint32_t> last_numbers_, last_comp_;
  size_t last_count_ = 0;
  std::vector<uint32_t> last_size_;      // per component of the last call: its views
  std::vector<uint32_t> same_as_last_;   // SameAsLast()
  std::vector<uint32_t> comp_size_;      // scratch: per component, its views
  std::vector<uint32_t> match_;          // per view: its index in the last call's, or kNone
  std::vector<uint8_t> last_matched_;    // per view of the last call
  std::vector<uint8_t> dirty_;           // per component of the last call: lost a view
  std::vector<uint32_t> first_of_comp_;  // per component of the last call: its first view now
  std::vector<uint32_t> dirty_views_;    // views of dirty components, grouped by component
  // Components of numbered views, from the last call's: unchanged for the components that kept
  // every view, recomputed among the views left in those that lost one, and every view that is
  // new met against all. The same components as computed afresh (they are the graph's).
  void ComponentsFromLast(const std::vector<ClassView>& views);
  std::vector<uint32_t> number_;  // per view: its class number
  std::vector<uint32_t> owner_;   // per link: the single flow that stamped it
  std::vector<std::pair<LinkId, uint32_t>> single_links_;
  // SolveInterned's caches and scratch.
  std::unordered_map<const FlowClass*, ClassData> class_data_;
  std::unordered_map<std::pair<const FlowClass*, const FlowClass*>, Shared, PairHash> shared_;
  std::vector<uint32_t> cls_;               // a solve's classes (indices of its unknowns)
  std::vector<const Shared*> pair_shared_;  // per pair (a, b) of cls_
  std::vector<uint8_t> pair_first_;
  std::vector<uint32_t> mark_;   // per link: the tag of the class whose reduced view holds it
  std::vector<double> ratio_;    // per link: scratch of DataOf
  std::vector<uint32_t> stamp_;  // per link: the tag of the last class or solve that marked it
  uint32_t tag_ = 0;
  std::vector<std::vector<LinkId>> red_links_;
  std::vector<std::vector<uint32_t>> red_counts_;
  std::vector<ClassView> red_views_;
  std::vector<double> virtual_cap_;
};

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_MAX_MIN_H_
