// How the double binary tree is built and timed (the contract is in tree.h).
//
// As NCCL builds it (src/graph/trees.cc, ncclGetBtree/ncclGetDtree): the nodes of the group form
// two binary trees over node positions 0..N−1 — tree 0 with NCCL's bit rule (parent of r is
// (r ^ b) | (b << 1), b = r's lowest set bit, or r ^ b when that is out of range) and tree 1 its
// mirror (N even) or shift by one (N odd), so a node that is a leaf in one tree is interior in
// the other. Inside a node the GPUs form a chain ending at the "head" GPU that talks to the
// network. Each tree carries half the data, per channel (one per NIC rail, as for rings).
// Reduce goes up (chain to head, children heads to parent head), broadcast comes down; chunks
// are pipelined: a chunk passes one hop per wave, so chunk i crosses the up hop of a node of
// height h at wave i + (M−1) + h (M = GPUs per node) and the tree finishes after
// P − 1 + 2(M−1) + H + D waves (P chunks, H root height, D max depth).
// Chunking: 512 KiB per chunk, halved down to 128 KiB while there are fewer than 8·depth chunks
// (NCCL enqueue.cc's rule for Tree/Simple), capped by the expansion's flow budget.
//
// Closed form: T = base + L + Σ over waves c / (f · 0.92 · r_w), where L is the latency of the
// leaf → root → leaf chain of hops (NCCL's Tree hop latencies; with uniform hops NCCL's
// 2((M−1)·α_nvlink + D·α_net)), c the chunk, f the protocol's data fraction, 0.92 tuning.cc's
// tree cap and r_w the most loaded link's share in wave w. Expansion: the same waves as flows;
// PrepareSchedule closes the fill (waves 0 … (M−1)+H+D, each adding transfers) and the drain
// into one segment each, and the steady state between them is one segment already, so a tree
// starts at most three flows per transfer (one when P is below the depth: a single closed run).

#include "comm/tree.h"

#include <algorithm>
#include <memory>

namespace trainsim::comm {

namespace {

// ncclGetBtree's parent rule.
int BtreeParent(int rank, int n) {
  if (rank == 0) return -1;
  int bit = 1;
  while (bit < n && (bit & rank) == 0) bit <<= 1;
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  return up;
}

}  // namespace

std::vector<int> DoubleBinaryTreeParents(int n, int which) {
  std::vector<int> parent(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    int p;
    if (which == 0) {
      p = BtreeParent(r, n);
    } else if (n % 2 == 1) {  // shift by one
      const int u = BtreeParent((r - 1 + n) % n, n);
      p = u == -1 ? -1 : (u + 1) % n;
    } else {  // mirror
      const int u = BtreeParent(n - 1 - r, n);
      p = u == -1 ? -1 : n - 1 - u;
    }
    parent[static_cast<size_t>(r)] = p;
  }
  return parent;
}

namespace {

// Per tree: parent, depth, height, and the nodes by decreasing depth (children before parents).
struct TreeShape {
  std::vector<int> parent, depth, height, deepest_first;
  int root_height = 0, max_depth = 0;
};

// NCCL's double binary tree `t` (0 or 1) over `nodes` nodes.
TreeShape ShapeOfTree(int nodes, int t) {
  TreeShape ts;
  ts.parent = DoubleBinaryTreeParents(nodes, t);
  ts.depth.assign(static_cast<size_t>(nodes), 0);
  ts.height.assign(static_cast<size_t>(nodes), 0);
  for (int v = 0; v < nodes; ++v) {
    int d = 0;
    for (int u = v; ts.parent[static_cast<size_t>(u)] != -1; u = ts.parent[static_cast<size_t>(u)])
      ++d;
    ts.depth[static_cast<size_t>(v)] = d;
    ts.max_depth = std::max(ts.max_depth, d);
  }
  ts.deepest_first.resize(static_cast<size_t>(nodes));
  for (int v = 0; v < nodes; ++v) ts.deepest_first[static_cast<size_t>(v)] = v;
  std::stable_sort(ts.deepest_first.begin(), ts.deepest_first.end(), [&](int a, int b) {
    return ts.depth[static_cast<size_t>(a)] > ts.depth[static_cast<size_t>(b)];
  });
  for (int v : ts.deepest_first) {
    const int p = ts.parent[static_cast<size_t>(v)];
    if (p >= 0) {
      ts.height[static_cast<size_t>(p)] =
          std::max(ts.height[static_cast<size_t>(p)], ts.height[static_cast<size_t>(v)] + 1);
    } else {
      ts.root_height = ts.height[static_cast<size_t>(v)];
    }
  }
  return ts;
}

// For the chain latency, per channel: each node's chain hops up and down (the same in both trees
// of the channel), flat: node v's are up[begin[v] .. begin[v + 1]) and down[...] alike.
struct ChannelChains {
  std::vector<Hop> up, down;
  std::vector<uint32_t> begin{0};
};
// Per (channel, tree): the tree's shape, the channel's chains, and the hop between each node's
// head and its parent's (both directions).
struct TreeHops {
  std::shared_ptr<const TreeShape> shape;
  std::shared_ptr<const ChannelChains> chains;
  std::vector<Hop> to_parent, from_parent;
};

// The slowest leaf → root → leaf path over every (channel, tree).
double TreeChainLatency(const std::vector<TreeHops>& trees, const ProtocolCosts& costs) {
  double worst = 0;
  std::vector<double> up, down;
  for (const TreeHops& th : trees) {
    const ChannelChains& ch = *th.chains;
    const std::vector<int>& parent = th.shape->parent;
    const std::vector<int>& deepest_first = th.shape->deepest_first;
    const size_t nodes = parent.size();
    up.assign(nodes, 0.0);
    down.assign(nodes, 0.0);
    for (size_t v = 0; v < nodes; ++v) {
      for (uint32_t h = ch.begin[v]; h < ch.begin[v + 1]; ++h) up[v] += HopLatency(costs, ch.up[h]);
    }
    double root_ready = 0;
    for (int v : deepest_first) {  // children before parents
      const int p = parent[static_cast<size_t>(v)];
      if (p >= 0) {
        const double arrive =
            up[static_cast<size_t>(v)] + HopLatency(costs, th.to_parent[static_cast<size_t>(v)]);
        up[static_cast<size_t>(p)] = std::max(up[static_cast<size_t>(p)], arrive);
      } else {
        root_ready = up[static_cast<size_t>(v)];
      }
    }
    // Parents before children: reverse of deepest-first.
    for (auto it = deepest_first.rbegin(); it != deepest_first.rend(); ++it) {
      const size_t v = static_cast<size_t>(*it);
      const int p = parent[v];
      down[v] =
          p < 0 ? root_ready : down[static_cast<size_t>(p)] + HopLatency(costs, th.from_parent[v]);
      double chain = 0;
      for (uint32_t h = ch.begin[v]; h < ch.begin[v + 1]; ++h)
        chain += HopLatency(costs, ch.down[h]);
      worst = std::max(worst, down[v] + chain);
    }
  }
  return worst;
}

}  // namespace

TransferSchedule BuildTreeSchedule(const Topology& topology, const std::vector<int>& gpus,
                                   uint64_t bytes) {
  const auto segments = SplitByNode(topology, gpus);
  const int channels = ChannelCount(topology, segments);
  const int nodes = static_cast<int>(segments.size());
  int64_t max_m = 0;
  for (const auto& seg : segments)
    max_m = std::max<int64_t>(max_m, static_cast<int64_t>(seg.size()));

  const std::shared_ptr<const TreeShape> shapes[2] = {
      std::make_shared<const TreeShape>(ShapeOfTree(nodes, 0)),
      std::make_shared<const TreeShape>(ShapeOfTree(nodes, 1))};
  // Transfers per (channel, tree, chunk): 2(n−1) (up and down edges).
  const int64_t n = static_cast<int64_t>(gpus.size());
  const int64_t transfers = 2 * channels * 2 * (n - 1);
  const int depth_hops =
      static_cast<int>(max_m - 1) + std::max(shapes[0]->max_depth, shapes[1]->max_depth);
  const uint64_t per_tree = CeilDiv(bytes, 2 * static_cast<uint64_t>(channels));
  const int64_t chunks =
      PipelineChunks(per_tree, 512 * 1024, 128 * 1024, 8 * std::max(depth_hops, 1), transfers);
  const uint64_t chunk = CeilDiv(per_tree, static_cast<uint64_t>(chunks));

  TransferSchedule s;
  s.family = LatencyFamily::kTree;
  s.transfers.reserve(static_cast<size_t>(transfers));
  auto add = [&](int src, int dst, int64_t first_wave) {
    PipelinedTransfer t;
    t.src_gpu = src;
    t.dst_gpu = dst;
    t.payload_bytes = chunk;
    t.first_wave = first_wave;
    t.num_waves = chunks;
    // Candidates for one class per hop kind, as the ring's legs; the tree's edges are less
    // symmetric than a ring's, and members that would not share their class's rate are split
    // off by the solver (max_min.h), so the rates stay the per-flow solution either way.
    t.flow_class = HopClassOf(topology, src, dst) == HopClass::kNvlink ? 0 : 1;
    s.transfers.push_back(t);
  };
  auto latency_trees = std::make_shared<std::vector<TreeHops>>();
  for (int c = 0; c < channels; ++c) {
    const std::vector<int> order = RingOrder(topology, segments, c);
    // Chains per node: the channel's rotation of the node's GPUs; chain[0] is the head.
    std::vector<std::vector<int>> chains;
    size_t pos = 0;
    for (const auto& seg : segments) {
      chains.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(pos),
                          order.begin() + static_cast<std::ptrdiff_t>(pos + seg.size()));
      pos += seg.size();
    }
    // The chains' hops, the same in both trees of the channel.
    auto chain_hops = std::make_shared<ChannelChains>();
    chain_hops->up.reserve(static_cast<size_t>(gpus.size()));
    chain_hops->down.reserve(static_cast<size_t>(gpus.size()));
    chain_hops->begin.reserve(static_cast<size_t>(nodes) + 1);
    for (int v = 0; v < nodes; ++v) {
      const auto& chain = chains[static_cast<size_t>(v)];
      for (size_t j = 1; j < chain.size(); ++j) {
        chain_hops->up.push_back(MakeHop(topology, chain[j], chain[j - 1]));
        chain_hops->down.push_back(MakeHop(topology, chain[j - 1], chain[j]));
      }
      chain_hops->begin.push_back(static_cast<uint32_t>(chain_hops->up.size()));
    }
    for (int t = 0; t < 2; ++t) {
      const TreeShape& ts = *shapes[t];
      const int64_t down_start = (max_m - 1) + ts.root_height;
      TreeHops th;
      th.shape = shapes[t];
      th.chains = chain_hops;
      th.to_parent.resize(static_cast<size_t>(nodes));
      th.from_parent.resize(static_cast<size_t>(nodes));
      for (int v = 0; v < nodes; ++v) {
        const auto& chain = chains[static_cast<size_t>(v)];
        const int p = ts.parent[static_cast<size_t>(v)];
        if (p >= 0) {
          th.to_parent[static_cast<size_t>(v)] =
              MakeHop(topology, chain[0], chains[static_cast<size_t>(p)][0]);
          th.from_parent[static_cast<size_t>(v)] =
              MakeHop(topology, chains[static_cast<size_t>(p)][0], chain[0]);
        }
      }
      latency_trees->push_back(std::move(th));
      for (int v = 0; v < nodes; ++v) {
        const auto& chain = chains[static_cast<size_t>(v)];
        const int64_t m = static_cast<int64_t>(chain.size());
        const int depth = ts.depth[static_cast<size_t>(v)];
        // Reduce: chain towards the head.
        for (int64_t j = 1; j < m; ++j) {
          add(chain[static_cast<size_t>(j)], chain[static_cast<size_t>(j - 1)], (max_m - 1) - j);
        }
        const int p = ts.parent[static_cast<size_t>(v)];
        if (p >= 0) {
          const int head = chain[0];
          const int parent_head = chains[static_cast<size_t>(p)][0];
          add(head, parent_head, (max_m - 1) + ts.height[static_cast<size_t>(v)]);  // reduce up
          add(parent_head, head, down_start + depth - 1);                           // bcast down
        }
        // Broadcast: head down the chain.
        for (int64_t j = 0; j + 1 < m; ++j) {
          add(chain[static_cast<size_t>(j)], chain[static_cast<size_t>(j + 1)],
              down_start + depth + j);
        }
      }
    }
  }
  // Leaf → root → leaf: a head can send up once its chain and all its children have reported;
  // the root then sends down, and each node passes the result down its chain.
  s.chain_latency_s = [latency_trees](const ProtocolCosts& costs) {
    return TreeChainLatency(*latency_trees, costs);
  };
  return s;
}

}  // namespace trainsim::comm
