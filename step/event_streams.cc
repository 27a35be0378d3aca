#include "step/event_streams.h"

#include <algorithm>

namespace trainsim::step {

GroupInsert CompareGroupInserted(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                 size_t from) {
  GroupInsert g;
  if (a.empty()) {
    g.first_difference = std::numeric_limits<size_t>::max();
    return g;
  }
  if (b.size() <= a.size()) return g;
  const size_t n = b.size() - a.size();
  size_t p = 0;
  while (p < a.size() && a[p] == b[p]) ++p;
  g.first_difference = p;
  // `a` a prefix of `b`: nothing of `a`'s ending to compare.
  if (p == a.size()) return g;
  const int64_t t = b.back() - a.back();
  for (size_t i = std::min(p, from); i < a.size(); ++i) {
    if (b[i + n] - a[i] != t) return g;
  }
  g.inserted = true;
  g.events = n;
  g.shift = t;
  return g;
}

bool SameGroupInserted(const GroupInsert& x, const GroupInsert& y) {
  return x.inserted && y.inserted && x.events == y.events && x.shift == y.shift;
}

}  // namespace trainsim::step
