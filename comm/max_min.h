// comm::MaxMinSolver — max-min fair rates by progressive filling (internal to comm/).
//
// Given flows (each a path of links) and link capacities, every flow gets the largest rate such
// that no link is over capacity and no flow could gain without taking from a flow with a smaller
// or equal rate. Progressive filling with a heap of per-link fair shares (capacity left ÷ flows
// not yet frozen): pop the smallest share, freeze that link's unfrozen flows at it, subtract
// them from the other links on their paths. O(P log L) for P path entries over L links.
//
// Invariants: deterministic (ties between equal shares broken by link id); a link of capacity 0
// freezes its flows at rate 0; scratch memory is reused between calls.
#ifndef TRAINSIM_COMM_MAX_MIN_H_
#define TRAINSIM_COMM_MAX_MIN_H_

#include <cstdint>
#include <span>
#include <vector>

#include "comm/topology.h"

namespace trainsim::comm {

class MaxMinSolver {
 public:
  // paths[f]: links of flow f; capacity_Bps[l]: capacity of link l (indexed by LinkId).
  // Writes rates (bytes/s) into *rates (resized to paths.size()).
  void Solve(const std::vector<std::span<const LinkId>>& paths,
             const std::vector<double>& capacity_Bps, std::vector<double>* rates);

 private:
  std::vector<double> cap_;
  std::vector<int32_t> count_;
  std::vector<uint32_t> begin_;
  std::vector<uint32_t> cursor_;
  std::vector<uint32_t> members_;
  std::vector<LinkId> touched_;
  std::vector<uint8_t> frozen_;
};

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_MAX_MIN_H_
