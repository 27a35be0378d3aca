#include "step/event_streams.h"

#include <algorithm>
#include <cstdlib>

namespace trainsim::step {

GroupInsert CompareGroupInserted(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                 size_t from) {
  GroupInsert g;
  if (a.empty()) {
    g.first_difference = std::numeric_limits<size_t>::max();
    return g;
  }
  size_t p = 0;
  while (p < a.size() && p < b.size() && a[p] == b[p]) ++p;
  g.first_difference = p;
  // `a` a prefix of `b` (nothing of `a`'s ending to compare), or `b` not longer.
  if (p == a.size() || b.size() <= a.size()) return g;
  const size_t n = b.size() - a.size();
  // After the previous pair parted at `from`, this one must part exactly one group later: the
  // n events between are the group inserted before, found again, not only the endings.
  const bool previous = from != std::numeric_limits<size_t>::max();
  if (previous && p != from + n) return g;
  const int64_t t = b.back() - a.back();
  for (size_t i = previous ? from : p; i < a.size(); ++i) {
    if (std::abs(b[i + n] - a[i] - t) > kJitterNs) return g;
  }
  g.inserted = true;
  g.events = n;
  g.shift = t;
  return g;
}

bool SameGroupInserted(const GroupInsert& x, const GroupInsert& y) {
  return x.inserted && y.inserted && x.events == y.events &&
         std::abs(x.shift - y.shift) <= kJitterNs;
}

}  // namespace trainsim::step
