// How comm::FlowNetwork solves its active set (its contract is in flow_network.h; the memo and
// the flows' bookkeeping are in flow_network.cc).
//
// Max-min filling runs in each connected component of the active set on its own (unknowns that
// share no link do not affect each other's rates), and a component's solution depends only on
// its unknowns in their order (their interned numbers: the memo's key). So a recomputation
// takes, in order of cost:
//  1. the whole set's memo, when the set was solved before (one look-up);
//  2. SolveChanged: only the components that changed since the last solve — those of the flows
//     that ended (labelled at the last solve), and those that the flows started since meet — are
//     found or solved by their numbers; every other flow keeps its rate. The same keys, so the
//     same rates as the whole set's components would give, to the bit (tests/comm/
//     flow_network_test.cc, FlowNetworkLocalSolveTest). Used while the changes are few next to
//     the set (kMaxMeets, kMaxLocal below, and at most half the set affected);
//  3. SolveActive: the whole set's components (MaxMinSolver::Components, from its last call's),
//     each found or solved, and the whole set's memo added when the set recurs.
// Where a class's members would not share one rate, the class splits into parts (SplitLoose)
// and the affected components are solved again, until every class is exact.

#include <algorithm>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "comm/flow_network.h"
#include "comm/union_find.h"

namespace trainsim::comm {

namespace {
// SolveChanged's limits: pair look-ups (fresh flows × active flows, affected flows² / 2), and
// active flows; beyond them the whole set's memo or components (SolveActive) cost less.
constexpr size_t kMaxMeets = 512;
constexpr size_t kMaxLocal = 128;
}  // namespace

void FlowNetwork::ClearFresh() {
  for (uint32_t slot : fresh_slots_) fresh_[slot] = 0;
  fresh_slots_.clear();
}

bool FlowNetwork::SolveChanged() {
  // Many fresh flows (a collective's start): meeting each against every flow costs more than
  // the whole set's components.
  if (active_.size() > kMaxLocal || fresh_slots_.size() * active_.size() > kMaxMeets) {
    return false;
  }
  if (label_mark_.size() < next_label_) label_mark_.resize(next_label_, 0);
  if (++solve_mark_ == 0) {
    std::fill(label_mark_.begin(), label_mark_.end(), 0);
    solve_mark_ = 1;
  }
  for (uint32_t l : ended_labels_) label_mark_[l] = solve_mark_;
  auto marked = [this](uint32_t slot) { return label_mark_[label_[slot]] == solve_mark_; };
  // Rounds: a class that splits is replaced by its parts (fresh, in its component) and the
  // affected components solved again, until no class splits.
  for (int round = 0; round < 64; ++round) {
    const size_t n = active_.size();
    // Already too many affected (below): the whole set's way, before meeting any pair.
    size_t known = 0;
    for (uint32_t slot : active_) known += fresh_[slot] || marked(slot);
    if (2 * known > n) return false;
    if (round > 0 || split_since_lookup_) {  // (else key_ is Recompute's, of this set)
      key_.clear();
      for (uint32_t slot : active_) key_.push_back(flows_[slot].number);
    }
    // The solver's views, made as they are needed (most solves meet few pairs).
    if (solver_views_.size() < n) solver_views_.resize(n);
    if (view_made_.size() < n) view_made_.resize(n, 0);
    if (++view_round_ == 0) {
      std::fill(view_made_.begin(), view_made_.end(), 0);
      view_round_ = 1;
    }
    auto view = [this](size_t i) -> const ClassView& {
      if (view_made_[i] != view_round_) {
        view_made_[i] = view_round_;
        const uint32_t slot = active_[i];
        if (const FlowClass* c = flows_[slot].cls.get()) {
          solver_views_[i] = {c->links, c->counts, c, flows_[slot].number};
        } else {
          solver_views_[i] = {paths_[slot], {}, nullptr, flows_[slot].number};
        }
      }
      return solver_views_[i];
    };
    // The old components a fresh flow meets change with it (components only grow by fresh
    // flows; an ended flow can only split its own).
    if (known > 0 && !fresh_slots_.empty()) {
      for (size_t i = 0; i < n; ++i) {
        if (!fresh_[active_[i]]) continue;
        for (size_t j = 0; j < n; ++j) {
          const uint32_t other = active_[j];
          if (fresh_[other] || marked(other)) continue;
          if (solver_.Meets(view(i), view(j))) {
            label_mark_[label_[other]] = solve_mark_;
          }
        }
      }
    }
    aff_index_.clear();
    for (size_t i = 0; i < n; ++i) {
      if (fresh_[active_[i]] || marked(active_[i])) aff_index_.push_back(uint32_t(i));
    }
    // Components among the affected flows (no other flow meets them), by first entry.
    const size_t m = aff_index_.size();
    // Pairwise, many affected flows cost more than the whole set's memo (one look-up when the
    // set recurs) or components.
    if (m * m > 2 * kMaxMeets || 2 * m > n) return false;
    UnionFindReset(&aff_parent_, m);
    auto find = [this](uint32_t x) { return UnionFindRoot(aff_parent_, x); };
    for (size_t x = 1; x < m; ++x) {
      for (size_t y = 0; y < x; ++y) {
        const uint32_t rx = find(uint32_t(x)), ry = find(uint32_t(y));
        if (rx == ry) continue;
        if (solver_.Meets(view(aff_index_[x]), view(aff_index_[y]))) {
          UnionFindUnite(aff_parent_, rx, ry);
        }
      }
    }
    rates_.resize(n);
    for (size_t i = 0; i < n; ++i) rates_[i] = flows_[active_[i]].rate_Bps;
    aff_comp_.resize(m);
    bool any_split = false;
    std::vector<uint32_t>& idx = comp_index_;
    for (size_t x = 0; x < m; ++x) {
      aff_comp_[x] = find(uint32_t(x));
      if (aff_comp_[x] != x) continue;
      idx.clear();
      for (size_t y = x; y < m; ++y) {
        if (find(uint32_t(y)) == x) idx.push_back(aff_index_[y]);
      }
      for (uint32_t i : idx) view(i);  // (FindOrSolve solves from them)
      // FindOrSolve may clear the memo: take what is needed from it at once.
      const Memo memo = memos_[FindOrSolve(idx.size() == n ? std::span<const uint32_t>()
                                                           : std::span<const uint32_t>(idx))];
      const std::span<const double> r = MemoRates(memo);
      for (size_t j = 0; j < idx.size(); ++j) rates_[idx[j]] = r[j];
      if (memo.parts == kNoParts) continue;
      if (!any_split) split_.assign(n, ClassParts{});
      any_split = true;
      for (size_t j = 0; j < idx.size(); ++j) split_[idx[j]] = memo_parts_[memo.parts + j];
    }
    if (!any_split) {
      ++local_solves_;
      // New labels for the affected components.
      const uint32_t base = next_label_;
      for (size_t x = 0; x < m; ++x) label_[active_[aff_index_[x]]] = base + aff_comp_[x];
      next_label_ = base + uint32_t(m);
      return true;
    }
    // The classes that split, and their parts, are fresh in the next round (SplitLoose gives
    // each part its class's label and freshness).
    for (size_t i = 0; i < n; ++i) {
      if (split_[i].first.cls == nullptr) continue;
      const uint32_t slot = active_[i];
      if (!fresh_[slot]) fresh_slots_.push_back(slot);
      fresh_[slot] = 1;
    }
    SplitLoose(split_);
    split_.clear();
    split_since_lookup_ = true;
  }
  return false;
}

void FlowNetwork::Relabel(std::span<const uint32_t> comp) {
  if (label_.size() < flows_.size()) label_.resize(flows_.size(), 0);
  uint32_t count = 1;
  for (size_t i = 0; i < active_.size(); ++i) {
    const uint32_t c = comp.empty() ? 0 : comp[i];
    label_[active_[i]] = next_label_ + c;
    count = std::max(count, c + 1);
  }
  next_label_ += count;
}

void FlowNetwork::SolveActive(bool looked_up) {
  // The active set's rates, found by its numbers (interned classes and paths), or assembled from
  // its connected components': unknowns that share no link do not affect each other's rates
  // (progressive filling runs in each component on its own), and while the whole set changes
  // combinatorially (buckets of many stages, each at its own wave) its components recur. Where
  // a class's members would not share one rate, split them off and solve again, until every
  // class is exact.
  for (bool first = true;; first = false) {
    size_t memo = kNoMemo;
    if (!first || !looked_up) {
      key_.clear();
      for (uint32_t slot : active_) key_.push_back(flows_[slot].number);
      memo = FindMemo(key_);
    }
    const bool found = memo != kNoMemo;
    if (!found) memo = SolveByComponents();  // (sets comp_)
    const Memo m = memos_[memo];
    if (m.parts == kNoParts) {
      const std::span<const double> r = MemoRates(m);
      rates_.assign(r.begin(), r.end());
      if (!found) {
        solved_comps_.assign(comp_.begin(), comp_.end());
      } else if (m.comps == kNoParts) {
        solved_comps_.clear();  // one component (or more, labelled as one: see AddMemo's call)
      } else {
        solved_comps_.assign(memo_comps_.begin() + m.comps, memo_comps_.begin() + m.comps + m.size);
      }
      break;
    }
    split_.assign(memo_parts_.begin() + m.parts, memo_parts_.begin() + m.parts + m.size);
    SplitLoose(split_);
    split_.clear();  // (holds no class beyond its use)
  }
}

size_t FlowNetwork::SolveByComponents() {
  solver_views_.clear();
  for (uint32_t slot : active_) {
    if (const FlowClass* c = flows_[slot].cls.get()) {
      solver_views_.push_back({c->links, c->counts, c, flows_[slot].number});
    } else {
      solver_views_.push_back({paths_[slot], {}, nullptr, flows_[slot].number});
    }
  }
  const size_t num = solver_.Components(solver_views_, capacity_Bps_.size(), &comp_);
  const std::vector<uint32_t>& same = solver_.SameAsLast();
  // The memo of component k: the last call's when it is the same component and its memo is
  // still there, else found or solved by its numbers.
  auto memo_of = [&](size_t k, std::span<const uint32_t> idx) {
    size_t memo = kNoMemo;
    if (k < same.size() && same[k] != MaxMinSolver::kNotBefore && same[k] < comp_memo_.size() &&
        comp_memo_[same[k]].epoch == memo_epoch_) {
      memo = comp_memo_[same[k]].memo;
    } else {
      memo = FindOrSolve(idx);  // (may clear the memo: a new epoch)
    }
    next_comp_memo_[k] = {memo, memo_epoch_};
    return memo;
  };
  next_comp_memo_.resize(num);
  if (num == 1) {
    // The set's memo is its one component's.
    const size_t memo = memo_of(0, std::span<const uint32_t>());
    comp_memo_.swap(next_comp_memo_);
    return memo;
  }
  // The entries of each component, in order: comp_index_[comp_begin_[k] .. comp_begin_[k + 1]).
  comp_begin_.assign(num + 1, 0);
  for (uint32_t k : comp_) ++comp_begin_[k + 1];
  for (size_t k = 0; k < num; ++k) comp_begin_[k + 1] += comp_begin_[k];
  comp_index_.resize(active_.size());
  comp_cursor_.assign(comp_begin_.begin(), comp_begin_.end() - 1);
  for (size_t i = 0; i < active_.size(); ++i) comp_index_[comp_cursor_[comp_[i]]++] = uint32_t(i);
  whole_rates_.resize(active_.size());
  bool any_loose = false;
  for (size_t k = 0; k < num; ++k) {
    const std::span<const uint32_t> idx(comp_index_.data() + comp_begin_[k],
                                        comp_begin_[k + 1] - comp_begin_[k]);
    // FindOrSolve may clear the memo: take what is needed from it at once.
    const Memo m = memos_[memo_of(k, idx)];
    const std::span<const double> r = MemoRates(m);
    for (size_t j = 0; j < idx.size(); ++j) whole_rates_[idx[j]] = r[j];
    if (m.parts == kNoParts) continue;
    if (!any_loose) whole_parts_.assign(active_.size(), ClassParts{});
    any_loose = true;
    for (size_t j = 0; j < idx.size(); ++j) whole_parts_[idx[j]] = memo_parts_[m.parts + j];
  }
  comp_memo_.swap(next_comp_memo_);
  const size_t at = AddMemo(
      key_, whole_rates_,
      any_loose ? std::span<const ClassParts>(whole_parts_) : std::span<const ClassParts>(),
      // Its components label the flows for SolveChanged, which never runs on a larger set
      // (one label for all is coarser than the components: safe, SolveChanged only does more).
      active_.size() <= kMaxLocal ? std::span<const uint32_t>(comp_) : std::span<const uint32_t>());
  whole_parts_.clear();
  return at;
}

size_t FlowNetwork::FindOrSolve(std::span<const uint32_t> idx) {
  const bool all = idx.empty();
  const size_t n = all ? active_.size() : idx.size();
  auto at = [&](size_t j) -> size_t { return all ? j : idx[j]; };
  // A component of one unknown: by its number, without hashing.
  const uint32_t single = key_[at(0)];
  if (n == 1 && single < alone_.size() && alone_[single] != 0) return alone_[single] - 1;
  comp_key_.clear();
  for (size_t j = 0; j < n; ++j) comp_key_.push_back(key_[at(j)]);
  size_t found = FindMemo(comp_key_);
  if (found == kNoMemo) {
    comp_views_.clear();
    for (size_t j = 0; j < n; ++j) comp_views_.push_back(solver_views_[at(j)]);
    solver_.SolveInterned(comp_views_, capacity_Bps_, &solve_rates_, &loose_);
    bool any_loose = false;
    for (size_t j = 0; j < loose_.size(); ++j) {
      // A class none of whose members is held would split into itself (only rounding could do
      // that); it is kept whole.
      const FlowClass* c = flows_[active_[at(j)]].cls.get();
      if (loose_[j].empty() || loose_[j].size() >= c->size()) continue;
      if (!any_loose) solve_parts_.assign(n, ClassParts{});
      any_loose = true;
      solve_parts_[j] = SplitClass(*c, flows_[active_[at(j)]].number, loose_[j]);
    }
    found = AddMemo(comp_key_, solve_rates_,
                    any_loose ? std::span<const ClassParts>(solve_parts_)
                              : std::span<const ClassParts>());  // (may clear alone_ too)
    solve_parts_.clear();
  }
  if (n == 1) {
    if (alone_.size() <= single) alone_.resize(single + 1, 0);
    alone_[single] = static_cast<uint32_t>(found + 1);
  }
  return found;
}

FlowNetwork::ClassParts FlowNetwork::SplitClass(const FlowClass& whole, uint32_t number,
                                                const std::vector<uint32_t>& loose) {
  uint64_t h = (1469598103934665603ull ^ number) * 1099511628211ull;
  for (uint32_t m : loose) h = (h ^ m) * 1099511628211ull;
  auto [first, last] = splits_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const Split& known = it->second;
    if (known.number == number && known.loose == loose) return {known.kept, known.split};
  }
  auto [kept, split] = SplitFlowClass(whole, loose, &split_crossings_);
  const ClassParts parts{Intern(std::move(kept)), Intern(std::move(split))};
  splits_.emplace(h, Split{number, loose, parts.first, parts.second});
  return parts;
}

}  // namespace trainsim::comm
