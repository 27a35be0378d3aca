// MaxMinSolver's connected components (the contract is in max_min.h): which numbered unknowns
// cross a common link, the components of a set of them (from the last call's when the set
// changed by a few unknowns), and which components are the last call's unchanged.

#include <algorithm>
#include <span>
#include <vector>

#include "comm/max_min.h"
#include "comm/union_find.h"

namespace trainsim::comm {

namespace {

// Whether two unknowns cross a common link: a merge of two classes' sorted link lists, a
// single path's links looked up in a class's, or two paths compared link by link.
bool LinksMeet(const ClassView& a, const ClassView& b) {
  if (a.members != nullptr && b.members != nullptr) {
    // Disjoint ranges meet nowhere; else a merge that gallops past runs of one list (classes
    // split at scale carry thousands of links, mostly in runs by node).
    if (a.links.empty() || b.links.empty() || a.links.back() < b.links.front() ||
        b.links.back() < a.links.front()) {
      return false;
    }
    auto gallop = [](std::span<const LinkId> v, size_t i, LinkId key) {
      size_t step = 1, hi = i;
      while (hi < v.size() && v[hi] < key) {
        i = hi + 1;
        hi += step;
        step *= 2;
      }
      return size_t(std::lower_bound(v.begin() + i, v.begin() + std::min(hi, v.size()), key) -
                    v.begin());
    };
    for (size_t i = 0, j = 0; i < a.links.size() && j < b.links.size();) {
      if (a.links[i] < b.links[j]) {
        i = gallop(a.links, i, b.links[j]);
      } else if (b.links[j] < a.links[i]) {
        j = gallop(b.links, j, a.links[i]);
      } else {
        return true;
      }
    }
    return false;
  }
  if (a.members == nullptr && b.members == nullptr) {
    for (LinkId l : a.links) {
      if (std::find(b.links.begin(), b.links.end(), l) != b.links.end()) return true;
    }
    return false;
  }
  const ClassView& path = a.members == nullptr ? a : b;
  const ClassView& cls = a.members == nullptr ? b : a;
  for (LinkId l : path.links) {
    if (std::binary_search(cls.links.begin(), cls.links.end(), l)) return true;
  }
  return false;
}

}  // namespace

bool MaxMinSolver::Meet(const ClassView& a, uint32_t na, const ClassView& b, uint32_t nb) {
  // Numbers past this many are compared afresh each time (meets_ grows with numbers²; 4,096
  // numbers: 8 MiB).
  constexpr uint32_t kMaxNumbers = 4096;
  if (na == nb) return true;  // the same links (two flows on one path), never empty
  if (na < nb) std::swap(na, nb);
  if (na >= kMaxNumbers) {
    // Beyond the table: a hash of the pairs met so far (a step interns tens of thousands of
    // numbers when classes split; comparing two classes' links each time cost more).
    const uint64_t key = (uint64_t{na} << 32) | nb;
    auto [it, fresh] = far_meets_.try_emplace(key, false);
    if (fresh) it->second = LinksMeet(a, b);
    return it->second;
  }
  if (meets_.size() <= na) meets_.resize(na + 1);
  std::vector<uint8_t>& row = meets_[na];
  if (row.size() <= nb) row.resize(na, 0);
  if (row[nb] == 0) row[nb] = LinksMeet(a, b) ? 2 : 1;
  return row[nb] == 2;
}

size_t MaxMinSolver::Components(const std::vector<ClassView>& views, size_t num_links,
                                std::vector<uint32_t>* comp) {
  const size_t n = views.size();
  UnionFindReset(&parent_, n);
  // The lower index becomes the root, so roots are components' first unknowns.
  auto find = [this](uint32_t x) { return UnionFindRoot(parent_, x); };
  auto unite = [this](uint32_t x, uint32_t y) { UnionFindUnite(parent_, x, y); };
  // Every unknown numbered by the caller: pairs through the table, starting from the last
  // call's components when there was one (a network's active set changes by a few unknowns
  // between solves).
  if (std::all_of(views.begin(), views.end(),
                  [](const ClassView& v) { return v.number != ClassView::kNoNumber; })) {
    const bool from_last = !last_numbers_.empty();
    if (!from_last) {
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (find(uint32_t(i)) == find(uint32_t(j))) continue;
          if (Meet(views[i], views[i].number, views[j], views[j].number)) {
            unite(static_cast<uint32_t>(i), static_cast<uint32_t>(j));
          }
        }
      }
    } else {
      ComponentsFromLast(views);
    }
    const size_t count = Number(n, comp);
    // A component is the last call's component c when every view of it was c's (matched into
    // c, which lost none: c's views stay together and nothing new met them) and it has as many.
    same_as_last_.assign(count, kNotBefore);
    comp_size_.assign(count, 0);
    if (from_last) {
      constexpr uint32_t kMixed = kNotBefore - 1;
      for (size_t j = 0; j < n; ++j) {
        const uint32_t k = (*comp)[j];
        comp_size_[k]++;
        uint32_t& c = same_as_last_[k];
        if (c == kMixed) continue;
        const uint32_t was = match_[j] == kNotBefore ? kMixed : last_comp_[match_[j]];
        if (was == kMixed || dirty_[was] || (c != kNotBefore && c != was)) {
          c = kMixed;
        } else {
          c = was;
        }
      }
      for (size_t k = 0; k < count; ++k) {
        uint32_t& c = same_as_last_[k];
        if (c == kMixed || (c != kNotBefore && last_size_[c] != comp_size_[k])) c = kNotBefore;
      }
    } else {
      for (size_t j = 0; j < n; ++j) comp_size_[(*comp)[j]]++;
    }
    last_size_.swap(comp_size_);
    last_count_ = count;
    last_numbers_.resize(n);
    for (size_t i = 0; i < n; ++i) last_numbers_[i] = views[i].number;
    last_comp_ = *comp;
    return last_count_;
  }
  last_numbers_.clear();
  same_as_last_.clear();
  // Single flows: through the links they stamp.
  if (stamp_.size() < num_links) {
    stamp_.resize(num_links, 0);
    mark_.resize(num_links, 0);
  }
  if (owner_.size() < num_links) owner_.resize(num_links, 0);
  if (tag_ >= UINT32_MAX - 1) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    std::fill(mark_.begin(), mark_.end(), 0);
    tag_ = 0;
  }
  const uint32_t tag = ++tag_;
  single_links_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (views[i].members != nullptr) continue;
    for (LinkId l : views[i].links) {
      const size_t li = static_cast<size_t>(l);
      if (stamp_[li] == tag) {
        unite(owner_[li], static_cast<uint32_t>(i));
      } else {
        stamp_[li] = tag;
        owner_[li] = static_cast<uint32_t>(i);
        single_links_.emplace_back(l, static_cast<uint32_t>(i));
      }
    }
  }
  number_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (views[i].members == nullptr) continue;
    number_[i] =
        views[i].number != ClassView::kNoNumber ? views[i].number : ClassNumber(views[i].members);
  }
  for (size_t i = 0; i < n; ++i) {
    const FlowClass* c = views[i].members;
    if (c == nullptr) continue;
    // Against the singles: each single link looked up in the class, or the class's links
    // checked against the stamps, whichever is cheaper.
    if (!single_links_.empty()) {
      if (single_links_.size() * 16 < c->links.size()) {
        for (const auto& [l, owner] : single_links_) {
          if (std::binary_search(c->links.begin(), c->links.end(), l)) {
            unite(static_cast<uint32_t>(i), owner);
          }
        }
      } else {
        for (LinkId l : c->links) {
          if (stamp_[static_cast<size_t>(l)] == tag) {
            unite(static_cast<uint32_t>(i), owner_[static_cast<size_t>(l)]);
          }
        }
      }
    }
    // Against the classes before it.
    for (size_t j = 0; j < i; ++j) {
      const FlowClass* d = views[j].members;
      if (d == nullptr || find(uint32_t(i)) == find(uint32_t(j))) continue;
      if (Meet(views[i], number_[i], views[j], number_[j])) {
        unite(static_cast<uint32_t>(i), static_cast<uint32_t>(j));
      }
    }
  }
  return Number(n, comp);
}

void MaxMinSolver::ComponentsFromLast(const std::vector<ClassView>& views) {
  constexpr uint32_t kNone = UINT32_MAX;
  const size_t n = views.size(), m = last_numbers_.size();
  auto find = [this](uint32_t x) { return UnionFindRoot(parent_, x); };
  auto unite = [this](uint32_t x, uint32_t y) { UnionFindUnite(parent_, x, y); };
  // Match the views to the last call's in order (equal numbers are equal links, so any
  // order-keeping match is right): a view not found a few places ahead is new.
  constexpr size_t kLookAhead = 8;
  match_.assign(n, kNone);
  last_matched_.assign(m, 0);
  size_t at = 0;
  for (size_t j = 0; j < n && at < m; ++j) {
    for (size_t k = at; k < std::min(m, at + kLookAhead); ++k) {
      if (last_numbers_[k] == views[j].number) {
        match_[j] = uint32_t(k);
        last_matched_[k] = 1;
        at = k + 1;
        break;
      }
    }
  }
  // A component that lost a view may have split; the others are whole.
  dirty_.assign(last_count_, 0);
  for (size_t k = 0; k < m; ++k) {
    if (!last_matched_[k]) dirty_[last_comp_[k]] = 1;
  }
  first_of_comp_.assign(last_count_, kNone);
  dirty_views_.clear();
  for (size_t j = 0; j < n; ++j) {
    parent_[j] = uint32_t(j);
    if (match_[j] == kNone) continue;
    const uint32_t c = last_comp_[match_[j]];
    if (dirty_[c]) {
      dirty_views_.push_back(uint32_t(j));
    } else if (first_of_comp_[c] == kNone) {
      first_of_comp_[c] = uint32_t(j);
    } else {
      parent_[j] = first_of_comp_[c];  // its component's first view: the lowest index
    }
  }
  // The views left in each dirty component, among themselves (no other view meets them).
  std::stable_sort(dirty_views_.begin(), dirty_views_.end(), [&](uint32_t a, uint32_t b) {
    return last_comp_[match_[a]] < last_comp_[match_[b]];
  });
  for (size_t a = 0; a < dirty_views_.size(); ++a) {
    const uint32_t i = dirty_views_[a];
    for (size_t b = a; b-- > 0;) {
      const uint32_t j = dirty_views_[b];
      if (last_comp_[match_[j]] != last_comp_[match_[i]]) break;
      if (find(i) == find(j)) continue;
      if (Meet(views[i], views[i].number, views[j], views[j].number)) unite(i, j);
    }
  }
  // New views, against every other.
  for (size_t i = 0; i < n; ++i) {
    if (match_[i] != kNone) continue;
    for (size_t j = 0; j < n; ++j) {
      if (j == i || find(uint32_t(i)) == find(uint32_t(j))) continue;
      if (Meet(views[i], views[i].number, views[j], views[j].number)) {
        unite(uint32_t(i), uint32_t(j));
      }
    }
  }
}

size_t MaxMinSolver::Number(size_t n, std::vector<uint32_t>* comp) {
  // Components by their first unknown (each root is its component's lowest index).
  comp->resize(n);
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t r = static_cast<uint32_t>(i);
    while (parent_[r] != r) r = parent_[r];
    (*comp)[i] = r == i ? static_cast<uint32_t>(count++) : (*comp)[r];
  }
  return count;
}

}  // namespace trainsim::comm
