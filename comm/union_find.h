// comm/union_find.h — internal to comm/: a union-find over 0..n−1 kept in the caller's vector
// (reused between calls). The lower index always becomes the root, so every set's root is its
// first member in index order: what numbering components by their first unknown relies on
// (MaxMinSolver::Components, FlowNetwork::SolveChanged). Finds halve the path as they go.
#ifndef TRAINSIM_COMM_UNION_FIND_H_
#define TRAINSIM_COMM_UNION_FIND_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainsim::comm {

// Every element its own set.
inline void UnionFindReset(std::vector<uint32_t>* parent, size_t n) {
  parent->resize(n);
  for (size_t i = 0; i < n; ++i) (*parent)[i] = static_cast<uint32_t>(i);
}

inline uint32_t UnionFindRoot(std::vector<uint32_t>& parent, uint32_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Joins the sets of x and y under the lower of their roots.
inline void UnionFindUnite(std::vector<uint32_t>& parent, uint32_t x, uint32_t y) {
  x = UnionFindRoot(parent, x);
  y = UnionFindRoot(parent, y);
  if (x < y) {
    parent[y] = x;
  } else if (y < x) {
    parent[x] = y;
  }
}

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_UNION_FIND_H_
