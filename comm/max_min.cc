#include "comm/max_min.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <queue>
#include <utility>

namespace trainsim::comm {

// Progressive filling over the touched links, whose members (flows or classes) are in CSR form
// (begin_, cursor_, members_) with cap_ and count_ set: freezes every member of the link with
// the smallest share at that share, sets its rate, and lets `freeze(member, share)` take it off
// its links. Freezing at the smallest share s only raises other links' shares
// ((c − s)/(k − 1) >= c/k when s <= c/k), so heap keys are lower bounds: a popped link whose
// share has grown since is pushed back with its current share instead of being updated on
// every change; shares are frozen in nondecreasing order, so the last share frozen on a link is
// the largest rate on it.
template <typename FreezeFn>
void MaxMinSolver::FillByHeapWith(std::vector<double>* rates, FreezeFn freeze) {
  using Entry = std::pair<double, LinkId>;
  std::vector<Entry> storage;
  storage.reserve(touched_.size() * 2);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap(std::greater<Entry>(),
                                                                           std::move(storage));
  for (LinkId l : touched_) {
    const size_t li = static_cast<size_t>(l);
    heap.emplace(cap_[li] / count_[li], l);
  }
  while (!heap.empty()) {
    const auto [key, l] = heap.top();
    heap.pop();
    const size_t li = static_cast<size_t>(l);
    if (count_[li] <= 0) continue;
    const double share = cap_[li] / count_[li];
    if (share > key) {
      heap.emplace(share, l);
      continue;
    }
    for (uint32_t e = begin_[li]; e < cursor_[li]; ++e) {
      const uint32_t m = members_[e];
      if (frozen_[m]) continue;
      frozen_[m] = 1;
      (*rates)[m] = share;
      freeze(m, share);
    }
  }
}

void MaxMinSolver::Solve(const std::vector<std::span<const LinkId>>& paths,
                         const std::vector<double>& capacity_Bps, std::vector<double>* rates) {
  const size_t num_links = capacity_Bps.size();
  if (count_.size() < num_links) {
    cap_.assign(num_links, 0.0);
    count_.assign(num_links, 0);
    begin_.assign(num_links, 0);
    cursor_.assign(num_links, 0);
  }
  const size_t num_flows = paths.size();
  rates->assign(num_flows, 0.0);
  touched_.clear();
  for (const auto& path : paths) {
    for (LinkId l : path) {
      if (count_[static_cast<size_t>(l)]++ == 0) touched_.push_back(l);
    }
  }
  // Flows through each link, contiguous (CSR).
  uint32_t total = 0;
  for (LinkId l : touched_) {
    const size_t li = static_cast<size_t>(l);
    begin_[li] = total;
    cursor_[li] = total;
    total += static_cast<uint32_t>(count_[li]);
  }
  members_.resize(total);
  for (size_t f = 0; f < num_flows; ++f) {
    for (LinkId l : paths[f])
      members_[cursor_[static_cast<size_t>(l)]++] = static_cast<uint32_t>(f);
  }
  // After the fill, cursor_[l] is the end of l's member range.
  for (LinkId l : touched_) {
    const size_t li = static_cast<size_t>(l);
    cap_[li] = std::max(0.0, capacity_Bps[li]);
  }
  frozen_.assign(num_flows, 0);
  FillByHeapWith(rates, [&](uint32_t f, double share) {
    for (LinkId l2 : paths[f]) {
      const size_t l2i = static_cast<size_t>(l2);
      cap_[l2i] = std::max(0.0, cap_[l2i] - share);
      --count_[l2i];
    }
  });
  for (LinkId l : touched_) count_[static_cast<size_t>(l)] = 0;
}

namespace {

// Sorts link ids ascending. A class's member links run to tens of thousands of ids (4,096
// tree edges × their hops), where an LSD radix sort over 11-bit digits (three passes for ids
// below 2^33) beats introsort several times; short lists, or ids outside [0, 2^31), take
// std::sort. The result is the same either way.
void SortLinkIds(std::vector<LinkId>* ids) {
  constexpr size_t kRadixMin = 2048;
  std::vector<LinkId>& v = *ids;
  if (v.size() < kRadixMin) {
    std::sort(v.begin(), v.end());
    return;
  }
  LinkId hi = 0;
  for (LinkId id : v) {
    if (id < 0) {
      std::sort(v.begin(), v.end());
      return;
    }
    hi = std::max(hi, id);
  }
  constexpr int kBits = 11;
  constexpr uint32_t kMask = (1u << kBits) - 1;
  std::vector<LinkId> tmp(v.size());
  std::vector<uint32_t> count(size_t(1) << kBits);
  for (int shift = 0; shift < 32 && (uint32_t(hi) >> shift) != 0; shift += kBits) {
    std::fill(count.begin(), count.end(), 0u);
    for (LinkId id : v) ++count[(uint32_t(id) >> shift) & kMask];
    uint32_t sum = 0;
    for (uint32_t& c : count) {
      const uint32_t n = c;
      c = sum;
      sum += n;
    }
    for (LinkId id : v) tmp[count[(uint32_t(id) >> shift) & kMask]++] = id;
    v.swap(tmp);
  }
}

// FNV-1a over the class's member_begin, then over its member_links in four interleaved lanes
// (one multiply chain per lane: a single chain's latency bound the splitting of classes with
// tens of thousands of member links), folded into one. Only interning compares hashes.
uint64_t HashMembers(const FlowClass& c) {
  constexpr uint64_t kPrime = 1099511628211ull;
  uint64_t h = 1469598103934665603ull;
  for (uint32_t b : c.member_begin) h = (h ^ b) * kPrime;
  uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
  const std::vector<LinkId>& v = c.member_links;
  size_t i = 0;
  for (; i + 4 <= v.size(); i += 4) {
    for (size_t k = 0; k < 4; ++k) lane[k] = (lane[k] ^ static_cast<uint32_t>(v[i + k])) * kPrime;
  }
  for (; i < v.size(); ++i) lane[0] = (lane[0] ^ static_cast<uint32_t>(v[i])) * kPrime;
  for (size_t k = 1; k < 4; ++k) lane[0] = (lane[0] ^ lane[k]) * kPrime;
  return lane[0];
}

}  // namespace

std::shared_ptr<const FlowClass> MakeFlowClass(
    const std::vector<std::span<const LinkId>>& members) {
  auto c = std::make_shared<FlowClass>();
  c->member_begin.reserve(members.size() + 1);
  c->member_begin.push_back(0);
  size_t total = 0;
  for (const auto& path : members) total += path.size();
  c->member_links.reserve(total);
  for (const auto& path : members) {
    c->member_links.insert(c->member_links.end(), path.begin(), path.end());
    c->member_begin.push_back(static_cast<uint32_t>(c->member_links.size()));
  }
  c->hash = HashMembers(*c);
  std::vector<LinkId> sorted = c->member_links;
  SortLinkIds(&sorted);
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    c->links.push_back(sorted[i]);
    c->counts.push_back(static_cast<uint32_t>(j - i));
    i = j;
  }
  return c;
}

std::pair<std::shared_ptr<const FlowClass>, std::shared_ptr<const FlowClass>> SplitFlowClass(
    const FlowClass& whole, std::span<const uint32_t> loose, std::vector<uint32_t>* scratch) {
  auto kept = std::make_shared<FlowClass>();
  auto split = std::make_shared<FlowClass>();
  size_t split_links = 0;
  for (uint32_t m : loose) split_links += whole.member_begin[m + 1] - whole.member_begin[m];
  kept->member_begin.reserve(whole.size() - loose.size() + 1);
  split->member_begin.reserve(loose.size() + 1);
  kept->member_links.reserve(whole.member_links.size() - split_links);
  split->member_links.reserve(split_links);
  kept->member_begin.push_back(0);
  split->member_begin.push_back(0);
  if (!whole.links.empty() && scratch->size() <= static_cast<size_t>(whole.links.back())) {
    scratch->resize(static_cast<size_t>(whole.links.back()) + 1, 0);
  }
  // Per link: the crossings of the part with fewer member links (the other's are the rest).
  std::vector<uint32_t>& crossings = *scratch;
  const bool count_split = 2 * split_links <= whole.member_links.size();
  size_t j = 0;
  for (size_t m = 0; m < whole.size(); ++m) {
    const std::span<const LinkId> path = whole.member(m);
    const bool is_loose = j < loose.size() && loose[j] == m;
    j += is_loose ? 1 : 0;
    FlowClass& part = is_loose ? *split : *kept;
    part.member_links.insert(part.member_links.end(), path.begin(), path.end());
    part.member_begin.push_back(static_cast<uint32_t>(part.member_links.size()));
    if (is_loose != count_split) continue;
    for (LinkId l : path) ++crossings[static_cast<size_t>(l)];
  }
  // The whole's links are ascending and unique, so each part's come out so too.
  for (size_t i = 0; i < whole.links.size(); ++i) {
    uint32_t& counted = crossings[static_cast<size_t>(whole.links[i])];
    const uint32_t in_split = count_split ? counted : whole.counts[i] - counted;
    if (in_split > 0) {
      split->links.push_back(whole.links[i]);
      split->counts.push_back(in_split);
    }
    if (whole.counts[i] > in_split) {
      kept->links.push_back(whole.links[i]);
      kept->counts.push_back(whole.counts[i] - in_split);
    }
    counted = 0;
  }
  kept->hash = HashMembers(*kept);
  split->hash = HashMembers(*split);
  return {std::move(kept), std::move(split)};
}

namespace {

int32_t Weight(const ClassView& c, size_t i) {
  return c.counts.empty() ? 1 : static_cast<int32_t>(c.counts[i]);
}

// Up to this many classes, each filling step scans the links for the smallest share instead of
// keeping a heap: a step freezes at least one class, so that is O(classes × links) against the
// heap's O(links · log links) plus the per-link member lists it needs. A training step's solves
// are a handful of classes (buckets of a few stages, a pipeline send) over hundreds of links.
constexpr size_t kScanClasses = 16;

}  // namespace

void MaxMinSolver::Freeze(const ClassView& c, double share) {
  for (size_t i = 0; i < c.links.size(); ++i) {
    const size_t l = static_cast<size_t>(c.links[i]);
    const int32_t w = Weight(c, i);
    cap_[l] = std::max(0.0, cap_[l] - w * share);
    count_[l] -= w;
    top_[l] = share;
  }
}

void MaxMinSolver::FillByScan(const std::vector<ClassView>& classes, std::vector<double>* rates) {
  const size_t n = classes.size();
  for (size_t left = n; left > 0;) {
    // The smallest share (capacity left ÷ crossings not yet frozen), ties to the lowest link id.
    double best = 0;
    LinkId at = -1;
    for (LinkId l : touched_) {
      const size_t li = static_cast<size_t>(l);
      if (count_[li] <= 0) continue;
      const double share = cap_[li] / count_[li];
      if (at < 0 || share < best || (share == best && l < at)) {
        best = share;
        at = l;
      }
    }
    if (at < 0) break;  // unreachable: an unfrozen class keeps its links' counts above 0
    for (size_t k = 0; k < n; ++k) {
      if (frozen_[k]) continue;
      const auto& links = classes[k].links;
      if (std::find(links.begin(), links.end(), at) == links.end()) continue;
      frozen_[k] = 1;
      (*rates)[k] = best;
      Freeze(classes[k], best);
      --left;
    }
  }
}

void MaxMinSolver::FillByHeap(const std::vector<ClassView>& classes, std::vector<double>* rates) {
  // Classes crossing each link, contiguous (CSR), as in Solve.
  uint32_t total = 0;
  for (LinkId l : touched_) {
    const size_t li = static_cast<size_t>(l);
    begin_[li] = total;
    total += cursor_[li];
    cursor_[li] = begin_[li];
  }
  members_.resize(total);
  for (size_t k = 0; k < classes.size(); ++k) {
    for (LinkId l : classes[k].links) members_[cursor_[static_cast<size_t>(l)]++] = uint32_t(k);
  }
  FillByHeapWith(rates, [&](uint32_t k, double share) { Freeze(classes[k], share); });
}

void MaxMinSolver::EnsureLinks(size_t num_links) {
  // count_ is all zero between solves, so growing keeps it so.
  if (count_.size() < num_links) {
    cap_.resize(num_links, 0.0);
    count_.resize(num_links, 0);
    begin_.resize(num_links, 0);
    cursor_.resize(num_links, 0);
  }
  if (top_.size() < num_links) top_.resize(num_links, 0.0);
}

void MaxMinSolver::SetUpAndFill(const std::vector<ClassView>& views,
                                const std::vector<double>& capacity_Bps,
                                std::vector<double>* rates) {
  const size_t real = capacity_Bps.size();
  const size_t n = views.size();
  rates->assign(n, 0.0);
  // count_[l]: member crossings of l; cursor_[l]: classes crossing it.
  touched_.clear();
  for (const ClassView& c : views) {
    for (size_t i = 0; i < c.links.size(); ++i) {
      const size_t li = static_cast<size_t>(c.links[i]);
      if (count_[li] == 0) {  // every weight is >= 1, so 0 means "not touched yet"
        touched_.push_back(c.links[i]);
        cursor_[li] = 0;
      }
      count_[li] += Weight(c, i);
      ++cursor_[li];
    }
  }
  for (LinkId l : touched_) {
    const size_t li = static_cast<size_t>(l);
    cap_[li] = li < real ? std::max(0.0, capacity_Bps[li]) : virtual_cap_[li - real];
    top_[li] = 0.0;
  }
  frozen_.assign(n, 0);
  if (n <= kScanClasses) {
    FillByScan(views, rates);
  } else {
    FillByHeap(views, rates);
  }
}

namespace {
// Exactness tolerances, relative: rounding of the filling's subtractions.
constexpr double kSaturated = 1e-9;
constexpr double kSameRate = 1e-9;
// SolveInterned's pair tables hold classes² entries: a step's solves have a handful of classes
// (buckets of a few stages, split parts); a pipelined tree's segment can have hundreds.
constexpr size_t kPairClasses = 48;
}  // namespace

void MaxMinSolver::SolveClasses(const std::vector<ClassView>& classes,
                                const std::vector<double>& capacity_Bps, std::vector<double>* rates,
                                std::vector<std::vector<uint32_t>>* loose) {
  EnsureLinks(capacity_Bps.size());
  const size_t n = classes.size();
  loose->resize(n);
  for (auto& l : *loose) l.clear();
  SetUpAndFill(classes, capacity_Bps, rates);
  // Exactness: a member is held at its class's rate r by a bottleneck, a link on its path left
  // with (relatively) no capacity on which no flow gets more than r. Without one, per-flow
  // filling would raise it further.
  for (size_t k = 0; k < n; ++k) {
    const ClassView& c = classes[k];
    if (c.members == nullptr || c.members->size() <= 1) continue;
    const double r = (*rates)[k];
    for (size_t m = 0; m < c.members->size(); ++m) {
      bool held = false;
      for (LinkId l : c.members->member(m)) {
        const size_t li = static_cast<size_t>(l);
        const double full = std::max(0.0, capacity_Bps[li]);
        if (cap_[li] <= kSaturated * full && top_[li] <= r * (1 + kSameRate)) {
          held = true;
          break;
        }
      }
      if (!held) (*loose)[k].push_back(static_cast<uint32_t>(m));
    }
  }
  for (LinkId l : touched_) count_[static_cast<size_t>(l)] = 0;
}

size_t MaxMinSolver::PairHash::operator()(
    const std::pair<const FlowClass*, const FlowClass*>& p) const {
  const auto a = reinterpret_cast<uintptr_t>(p.first);
  const auto b = reinterpret_cast<uintptr_t>(p.second);
  return std::hash<uintptr_t>()(a * 0x9e3779b97f4a7c15ull ^ b);
}

void MaxMinSolver::ForgetClasses() {
  class_data_.clear();
  shared_.clear();
  class_number_.clear();
  meets_.clear();
  far_meets_.clear();
  last_numbers_.clear();
  last_comp_.clear();
  last_count_ = 0;
  same_as_last_.clear();
}

uint32_t MaxMinSolver::ClassNumber(const FlowClass* c) {
  auto [it, fresh] = class_number_.try_emplace(c, static_cast<uint32_t>(class_number_.size()));
  return it->second;
}

const MaxMinSolver::ClassData& MaxMinSolver::DataOf(const FlowClass* c,
                                                    const std::vector<double>& capacity_Bps) {
  auto [it, fresh] = class_data_.try_emplace(c);
  ClassData& d = it->second;
  if (!fresh) return d;
  if (ratio_.size() < capacity_Bps.size()) ratio_.resize(capacity_Bps.size());
  // Unsorted: a solve wants only the smallest ratio among the links no other unknown crosses,
  // usually the bound (sorting every new class's links, up to tens of thousands for a DP class
  // split at 131,072 GPUs, cost a third of such a step).
  d.link_ratio.resize(c->links.size());
  for (size_t i = 0; i < c->links.size(); ++i) {
    const size_t l = static_cast<size_t>(c->links[i]);
    const double ratio = std::max(0.0, capacity_Bps[l]) / c->counts[i];
    ratio_[l] = ratio;
    d.link_ratio[i] = ratio;
  }
  d.bound =
      d.link_ratio.empty() ? 0.0 : *std::min_element(d.link_ratio.begin(), d.link_ratio.end());
  for (size_t i = 0; i < d.link_ratio.size(); ++i) {
    if (d.link_ratio[i] == d.bound) d.at_bound.push_back(static_cast<uint32_t>(i));
  }
  d.member_ratio.resize(c->member_links.size());
  for (size_t e = 0; e < c->member_links.size(); ++e) {
    d.member_ratio[e] = ratio_[static_cast<size_t>(c->member_links[e])];
  }
  d.members_at_bound = true;
  for (size_t m = 0; m < c->size() && d.members_at_bound; ++m) {
    bool at = false;
    for (uint32_t e = c->member_begin[m]; e < c->member_begin[m + 1] && !at; ++e) {
      at = d.member_ratio[e] <= d.bound;
    }
    d.members_at_bound = at;
  }
  return d;
}

std::pair<const MaxMinSolver::Shared*, bool> MaxMinSolver::SharedLinks(const FlowClass* a,
                                                                       const FlowClass* b) {
  const bool first = !std::less<const FlowClass*>()(b, a);
  if (!first) std::swap(a, b);
  auto [it, fresh] = shared_.try_emplace({a, b});
  Shared& s = it->second;
  if (fresh) {
    size_t i = 0, j = 0;
    while (i < a->links.size() && j < b->links.size()) {
      if (a->links[i] < b->links[j]) {
        ++i;
      } else if (b->links[j] < a->links[i]) {
        ++j;
      } else {
        s.links.push_back(a->links[i]);
        s.counts_first.push_back(a->counts[i++]);
        s.counts_second.push_back(b->counts[j++]);
      }
    }
  }
  return {&s, first};
}

// The smallest ratio of a link of `c` that no other unknown of the solve crosses (links stamped
// with `tag` are shared), into *ratio; false when every link is shared.
bool MaxMinSolver::SmallestOwnRatio(const FlowClass* c, const ClassData& d, uint32_t tag,
                                    double* ratio) const {
  auto own = [&](size_t e) { return stamp_[static_cast<size_t>(c->links[e])] != tag; };
  *ratio = d.bound;
  if (std::any_of(d.at_bound.begin(), d.at_bound.end(), own)) return true;
  bool found = false;
  for (size_t e = 0; e < d.link_ratio.size(); ++e) {
    if (!own(e) || (found && d.link_ratio[e] >= *ratio)) continue;
    *ratio = d.link_ratio[e];
    found = true;
  }
  return found;
}

void MaxMinSolver::SolveInterned(const std::vector<ClassView>& classes,
                                 const std::vector<double>& capacity_Bps,
                                 std::vector<double>* rates,
                                 std::vector<std::vector<uint32_t>>* loose) {
  const size_t real = capacity_Bps.size();
  const size_t n = classes.size();
  // Pairs cost O(classes²): past this many classes the plain filling is cheaper.
  size_t num_classes = 0;
  for (const ClassView& c : classes) num_classes += c.members != nullptr;
  if (num_classes > kPairClasses) {
    SolveClasses(classes, capacity_Bps, rates, loose);
    return;
  }
  EnsureLinks(real + n);
  if (stamp_.size() < real) {
    stamp_.resize(real, 0);
    mark_.resize(real, 0);
  }
  if (tag_ >= UINT32_MAX - n - 1) {  // tags would wrap: start afresh
    std::fill(stamp_.begin(), stamp_.end(), 0);
    std::fill(mark_.begin(), mark_.end(), 0);
    tag_ = 0;
  }
  const uint32_t tag = ++tag_;
  loose->resize(n);
  for (auto& l : *loose) l.clear();
  if (red_links_.size() < n) {
    red_links_.resize(n);
    red_counts_.resize(n);
  }
  // The classes, and the pairs' shared links, once per pair.
  cls_.clear();
  size_t single_links = 0;
  for (size_t i = 0; i < n; ++i) {
    if (classes[i].members != nullptr) {
      cls_.push_back(static_cast<uint32_t>(i));
    } else {
      single_links += classes[i].links.size();
    }
  }
  const size_t nc = cls_.size();
  pair_shared_.assign(nc * nc, nullptr);
  pair_first_.assign(nc * nc, 0);
  for (size_t a = 0; a < nc; ++a) {
    for (size_t b = a + 1; b < nc; ++b) {
      const auto [shared, first] = SharedLinks(classes[cls_[a]].members, classes[cls_[b]].members);
      pair_shared_[a * nc + b] = pair_shared_[b * nc + a] = shared;
      pair_first_[a * nc + b] = first;
      pair_first_[b * nc + a] = !first;
    }
  }
  // Each class's reduced view: the links another class or a single flow also crosses, with its
  // crossings of them (each link once), then its private bound as a virtual link.
  virtual_cap_.assign(n, 0.0);
  red_views_.assign(classes.begin(), classes.end());
  for (size_t i = 0; i < n; ++i) {
    if (classes[i].members == nullptr) {
      for (LinkId l : classes[i].links) stamp_[static_cast<size_t>(l)] = tag;
    }
  }
  const uint32_t singles_tag = tag;  // stamp_ == tag so far: on a single flow's path
  for (size_t a = 0; a < nc; ++a) {
    const size_t i = cls_[a];
    const FlowClass* c = classes[i].members;
    const uint32_t mine = ++tag_;
    std::vector<LinkId>& links = red_links_[i];
    std::vector<uint32_t>& counts = red_counts_[i];
    links.clear();
    counts.clear();
    // Before the pairs: stamp_ still tells the singles' links apart.
    if (single_links > 0) {
      // Whichever is cheaper: each single link looked up in the class, or the class's links
      // checked against the singles' stamps.
      if (single_links * 16 < c->links.size()) {
        for (size_t j = 0; j < n; ++j) {
          if (classes[j].members != nullptr) continue;
          for (LinkId l : classes[j].links) {
            const auto at = std::lower_bound(c->links.begin(), c->links.end(), l);
            if (at == c->links.end() || *at != l || mark_[size_t(l)] == mine) continue;
            mark_[size_t(l)] = mine;
            links.push_back(l);
            counts.push_back(c->counts[size_t(at - c->links.begin())]);
          }
        }
      } else {
        for (size_t e = 0; e < c->links.size(); ++e) {
          const size_t li = static_cast<size_t>(c->links[e]);
          if (stamp_[li] != singles_tag) continue;
          mark_[li] = mine;
          links.push_back(c->links[e]);
          counts.push_back(c->counts[e]);
        }
      }
    }
    for (size_t b = 0; b < nc; ++b) {
      const Shared* shared = pair_shared_[a * nc + b];
      if (shared == nullptr) continue;
      const auto& own = pair_first_[a * nc + b] ? shared->counts_first : shared->counts_second;
      for (size_t e = 0; e < shared->links.size(); ++e) {
        const size_t li = static_cast<size_t>(shared->links[e]);
        if (mark_[li] == mine) continue;
        mark_[li] = mine;
        links.push_back(shared->links[e]);
        counts.push_back(own[e]);
      }
    }
  }
  for (size_t a = 0; a < nc; ++a) {
    for (LinkId l : red_links_[cls_[a]]) stamp_[static_cast<size_t>(l)] = tag;
  }
  for (size_t i = 0; i < n; ++i) {
    const FlowClass* c = classes[i].members;
    if (c == nullptr) continue;
    const ClassData& d = DataOf(c, capacity_Bps);
    double ratio = 0;
    const bool found = SmallestOwnRatio(c, d, tag, &ratio);
    if (found) {
      virtual_cap_[i] = ratio;
      red_links_[i].push_back(static_cast<LinkId>(real + i));
      red_counts_[i].push_back(1);
    }
    red_views_[i] = {red_links_[i], red_counts_[i], c};
  }
  SetUpAndFill(red_views_, capacity_Bps, rates);
  // The exactness check of SolveClasses. A link no other unknown crosses (not stamped) carries
  // only its class: it is saturated when the class's rate reaches its ratio.
  for (size_t k = 0; k < n; ++k) {
    const FlowClass* c = classes[k].members;
    if (c == nullptr || c->size() <= 1) continue;
    const double r = (*rates)[k];
    const ClassData& d = DataOf(c, capacity_Bps);
    // At its standalone bound, every link at that ratio is saturated by this class alone (no
    // other flow can get more on it), and every member crosses one.
    if (d.members_at_bound && r >= d.bound * (1 - kSameRate)) continue;
    for (size_t m = 0; m < c->size(); ++m) {
      bool held = false;
      for (uint32_t e = c->member_begin[m]; e < c->member_begin[m + 1] && !held; ++e) {
        const size_t li = static_cast<size_t>(c->member_links[e]);
        if (stamp_[li] == tag) {
          held = cap_[li] <= kSaturated * std::max(0.0, capacity_Bps[li]) &&
                 top_[li] <= r * (1 + kSameRate);
        } else {
          held = r >= d.member_ratio[e] * (1 - kSaturated);
        }
      }
      if (!held) (*loose)[k].push_back(static_cast<uint32_t>(m));
    }
  }
  for (LinkId l : touched_) count_[static_cast<size_t>(l)] = 0;
}

}  // namespace trainsim::comm
