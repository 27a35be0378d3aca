#include "step/event_streams.h"

#include <cstdlib>

namespace trainsim::step {

GroupInsert CompareGroupRepeated(const EventStream& x, const EventStream& y) {
  const std::vector<int64_t>& a = x.times;
  const std::vector<int64_t>& b = y.times;
  GroupInsert g;
  // Kinds on both streams, one per event, or on neither.
  const bool kinds = !x.kinds.empty() || !y.kinds.empty();
  if (kinds && (x.kinds.size() != a.size() || y.kinds.size() != b.size())) return g;
  auto same_kind = [&](size_t i, size_t j) { return !kinds || x.kinds[i] == y.kinds[j]; };
  size_t p = 0;
  while (p < a.size() && p < b.size() && a[p] == b[p] && same_kind(p, p)) ++p;
  g.first_difference = p;
  // `a` a prefix of `b` (nothing of `a`'s ending to compare), or `b` not longer.
  if (p == a.size() || b.size() <= a.size()) return g;
  const size_t n = b.size() - a.size();
  // The group before the parting point must be whole, to be compared with the one inserted.
  if (p < n) return g;
  // From one group before the parting point on, every event of `a` recurs `t` later in `b`,
  // of the same kind: below p that is the group before (equal in `a` and `b`) found again as
  // the group inserted; from p on, `a`'s ending found again as `b`'s.
  const int64_t t = b.back() - a.back();
  for (size_t i = p - n; i < a.size(); ++i) {
    if (std::abs(b[i + n] - a[i] - t) > kJitterNs || !same_kind(i, i + n)) return g;
  }
  g.inserted = true;
  g.events = n;
  g.shift = t;
  return g;
}

}  // namespace trainsim::step
