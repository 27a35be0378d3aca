#include "comm/max_min.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

namespace trainsim::comm {

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
  using Entry = std::pair<double, LinkId>;
  std::vector<Entry> storage;
  storage.reserve(touched_.size() * 2);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap(std::greater<Entry>(),
                                                                           std::move(storage));
  for (LinkId l : touched_) {
    const size_t li = static_cast<size_t>(l);
    cap_[li] = std::max(0.0, capacity_Bps[li]);
    heap.emplace(cap_[li] / count_[li], l);
  }
  frozen_.assign(num_flows, 0);
  // Freezing flows at the smallest share s only raises other links' shares ((c − s)/(k − 1) >= c/k
  // when s <= c/k), so heap keys are lower bounds: a popped link whose share has grown since is
  // pushed back with its current share instead of being updated on every change.
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
    for (uint32_t k = begin_[li]; k < cursor_[li]; ++k) {
      const uint32_t f = members_[k];
      if (frozen_[f]) continue;
      frozen_[f] = 1;
      (*rates)[f] = share;
      for (LinkId l2 : paths[f]) {
        const size_t l2i = static_cast<size_t>(l2);
        cap_[l2i] = std::max(0.0, cap_[l2i] - share);
        --count_[l2i];
      }
    }
  }
  for (LinkId l : touched_) count_[static_cast<size_t>(l)] = 0;
}

}  // namespace trainsim::comm
