#include "sweep/estimator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "parallelism/compute.h"
#include "parallelism/layout.h"
#include "parallelism/memory.h"
#include "parallelism/model.h"

namespace trainsim::sweep {
namespace {

namespace par = trainsim::parallelism;

comm::Op ToCommOp(par::TpCollectiveKind k) {
  switch (k) {
    case par::TpCollectiveKind::kAllReduce:
      return comm::Op::kAllReduce;
    case par::TpCollectiveKind::kReduceScatter:
      return comm::Op::kReduceScatter;
    case par::TpCollectiveKind::kAllGather:
      return comm::Op::kAllGather;
  }
  return comm::Op::kAllReduce;
}

double SumOps(const step::StepConfig& cfg, const std::vector<par::Op>& ops, bool forward,
              bool selective_only = false) {
  double total = 0;
  for (const par::Op& op : ops) {
    if (selective_only && !op.selective_recompute) continue;
    total += par::OpTimeSeconds(cfg.gpu, cfg.compute, op, forward);
  }
  return total;
}

struct Ctx {
  EstimatorCache* cache;
  const comm::Topology* topo;
  std::vector<int> tp_group;
};

Result<double> SumTp(Ctx& ctx, const std::vector<par::TpCollective>& cs, bool forward) {
  double total = 0;
  if (ctx.tp_group.size() <= 1) return total;
  for (const par::TpCollective& c : cs) {
    if (c.forward != forward || c.bytes <= 0) continue;
    Result<double> s =
        ctx.cache->CollectiveSeconds(*ctx.topo, ToCommOp(c.kind), ctx.tp_group, c.bytes);
    if (!s.ok()) return s.status();
    total += *s;
  }
  return total;
}

// One virtual stage's passes for one micro-batch (the step simulation's ChunkCost).
struct Pass {
  double fwd_s = 0, bwd_s = 0;  // compute + TP collectives (+ ZeRO-3 gather)
  double bwd_compute_s = 0;     // over which gradient buckets become ready
};

}  // namespace

Result<const comm::Topology*> EstimatorCache::TopologyFor(const comm::TopologySpec& spec) {
  auto it = topologies_.find(spec.nodes);
  if (it != topologies_.end()) return it->second.get();
  Result<comm::Topology> t = comm::Topology::Build(spec);
  if (!t.ok()) return t.status();
  auto owned = std::make_unique<comm::Topology>(std::move(*t));
  const comm::Topology* raw = owned.get();
  topologies_[spec.nodes] = std::move(owned);
  return raw;
}

Result<double> EstimatorCache::CollectiveSeconds(const comm::Topology& topo, comm::Op op,
                                                 const std::vector<int>& gpus, double bytes) {
  if (gpus.size() <= 1 || bytes <= 0) return 0.0;
  const int stride = gpus[1] - gpus[0];
  bool arithmetic = true;
  for (size_t i = 1; i < gpus.size(); ++i) arithmetic &= gpus[i] - gpus[i - 1] == stride;
  const auto key =
      std::make_tuple(&topo, int(op), gpus[0], int(gpus.size()), stride, uint64_t(bytes));
  if (arithmetic) {
    auto it = collectives_.find(key);
    if (it != collectives_.end()) return it->second;
  }
  comm::CollectiveSpec spec;
  spec.op = op;
  spec.gpus = gpus;
  spec.bytes = uint64_t(bytes);
  Result<comm::CollectiveEstimate> est = comm::EstimateCollective(topo, spec);
  if (!est.ok()) return est.status();
  const double s = est->time.seconds();
  if (arithmetic) collectives_[key] = s;
  return s;
}

Result<StepEstimate> EstimateStep(const step::StepConfig& cfg, EstimatorCache* cache) {
  const par::ParallelConfig& c = cfg.parallel;
  const par::ModelSpec& m = cfg.model;
  Result<const comm::Topology*> topo_or = cache->TopologyFor(cfg.topology);
  if (!topo_or.ok()) return topo_or.status();
  const comm::Topology& topo = **topo_or;
  TRAINSIM_RETURN_IF_ERROR(par::ValidateLayout(m, c, topo.num_gpus(), topo.gpus_per_node()));
  if (cfg.gpu.peak_flops <= 0 || cfg.gpu.hbm_bytes_per_s <= 0) {
    return Status::InvalidArgument("the GPU's peak FLOP/s and HBM bandwidth must be positive");
  }
  const par::Layout layout(c, topo.gpus_per_node());
  Ctx ctx{cache, &topo, layout.TpGroup(0)};

  const int p = c.pp;
  const int v = c.schedule == par::Schedule::kInterleaved1F1B ? c.virtual_stages : 1;
  const int vstages = p * v;
  const int64_t mbs = c.num_micro_batches();
  const double layers = double(m.num_layers) / vstages;
  const par::TensorSplit split{c.tp, c.sequence_parallel};
  // When a node has fewer NICs than GPUs, the TP peers share one (the step simulation scales a
  // flow's bytes by the peers on its NIC).
  const int share = std::max(1, topo.spec().gpus_per_node / std::max(1, topo.spec().nics_per_node));
  const int nic_share = std::min(c.tp, share);

  // --- per-chunk passes: exactly the step simulation's ChunkCost -------------------------------
  const std::vector<par::Op> layer = par::LayerOps(m, split, c.micro_batch);
  const auto layer_tp = par::LayerTpCollectives(m, split, c.micro_batch);
  const double l_fwd = SumOps(cfg, layer, true), l_bwd = SumOps(cfg, layer, false);
  double l_recompute = 0;
  if (c.recompute == par::Recompute::kFull) l_recompute = l_fwd;
  if (c.recompute == par::Recompute::kSelective) l_recompute = SumOps(cfg, layer, true, true);
  Result<double> l_tp_fwd = SumTp(ctx, layer_tp, true);
  if (!l_tp_fwd.ok()) return l_tp_fwd.status();
  Result<double> l_tp_bwd = SumTp(ctx, layer_tp, false);
  if (!l_tp_bwd.ok()) return l_tp_bwd.status();
  const double l_tp_recompute = c.recompute == par::Recompute::kFull ? *l_tp_fwd : 0.0;
  const auto emb = par::EmbeddingOps(m, split, c.micro_batch);
  const auto head = par::HeadOps(m, split, c.micro_batch);
  Result<double> emb_tp = SumTp(ctx, par::EmbeddingTpCollectives(m, split, c.micro_batch), true);
  if (!emb_tp.ok()) return emb_tp.status();
  const auto head_tp_list = par::HeadTpCollectives(m, split, c.micro_batch);
  Result<double> head_tp_fwd = SumTp(ctx, head_tp_list, true);
  if (!head_tp_fwd.ok()) return head_tp_fwd.status();
  Result<double> head_tp_bwd = SumTp(ctx, head_tp_list, false);
  if (!head_tp_bwd.ok()) return head_tp_bwd.status();
  const double boundary_bytes = double(c.micro_batch) * m.seq_len * m.hidden * m.bytes_per_element;
  double pp_gather = 0;
  if (p > 1 && c.pp_scatter_gather && c.tp > 1 && !c.sequence_parallel) {
    Result<double> g =
        cache->CollectiveSeconds(topo, comm::Op::kAllGather, ctx.tp_group, boundary_bytes);
    if (!g.ok()) return g.status();
    pp_gather = *g;
  }
  // ZeRO-3 gathers each chunk's weights over DP before every pass (no prefetch, as simulated).
  std::vector<double> zero3_gather(size_t(p), 0.0);
  if (c.zero_stage >= 3 && c.dp > 1) {
    for (int s = 0; s < p; ++s) {
      const double bytes = 2.0 * par::ParametersPerGpu(m, c, s) / v * nic_share;
      Result<double> g = cache->CollectiveSeconds(topo, comm::Op::kAllGather,
                                                  layout.DpGroup(layout.GpuOf({0, s, 0})), bytes);
      if (!g.ok()) return g.status();
      zero3_gather[size_t(s)] = *g;
    }
  }
  std::vector<Pass> passes(static_cast<size_t>(vstages));
  for (int j = 0; j < vstages; ++j) {
    Pass& k = passes[size_t(j)];
    double fwd_c = layers * l_fwd, bwd_c = layers * (l_bwd + l_recompute);
    double fwd_tp = layers * *l_tp_fwd, bwd_tp = layers * (*l_tp_bwd + l_tp_recompute);
    if (j == 0) {
      fwd_c += SumOps(cfg, emb, true);
      bwd_c += SumOps(cfg, emb, false);
      fwd_tp += *emb_tp;
    } else {
      fwd_tp += pp_gather;
    }
    if (j == vstages - 1) {
      fwd_c += SumOps(cfg, head, true);
      bwd_c += SumOps(cfg, head, false);
      fwd_tp += *head_tp_fwd;
      bwd_tp += *head_tp_bwd;
    } else {
      bwd_tp += pp_gather;
    }
    const double z3 = zero3_gather[size_t(j % p)];
    k.fwd_s = fwd_c + fwd_tp + z3;
    k.bwd_s = bwd_c + bwd_tp + z3;
    k.bwd_compute_s = bwd_c + bwd_tp;
  }

  // --- pipeline
  // ----------------------------------------------------------------------------------- A
  // stage-to-stage transfer (the step simulation's flow: 1/t of the boundary activation with the
  // scatter/gather optimisation or SP, times the NIC sharing), closed form on the idle path.
  double p2p_s = 0;
  if (p > 1) {
    double bytes = boundary_bytes;
    if ((c.pp_scatter_gather || c.sequence_parallel) && c.tp > 1) bytes /= c.tp;
    bytes *= nic_share;
    Result<double> t = cache->CollectiveSeconds(
        topo, comm::Op::kSendRecv, {layout.GpuOf({0, 0, 0}), layout.GpuOf({0, 1, 0})}, bytes);
    if (!t.ok()) return t.status();
    p2p_s = *t;
  }
  // Work of one micro-batch on each rank (all its chunks), the busiest rank, and one chunk pass.
  std::vector<double> rank_work(size_t(p), 0.0);
  double max_pass = 0, sum_pass = 0;
  for (int j = 0; j < vstages; ++j) {
    const double w = passes[size_t(j)].fwd_s + passes[size_t(j)].bwd_s;
    rank_work[size_t(j % p)] += w;
    // Blocking sends (ParallelConfig::overlap_p2p false): each of the chunk's sends — its
    // output forward unless it is the last virtual stage, its input gradient backward unless it
    // is the first — keeps the rank busy until it drains.
    if (!c.overlap_p2p && p > 1) {
      rank_work[size_t(j % p)] += ((j < vstages - 1) + (j > 0)) * p2p_s;
    }
    max_pass = std::max(max_pass, w);
    sum_pass += w;
  }
  const double busiest = *std::max_element(rank_work.begin(), rank_work.end());
  // Fill and drain: the first micro-batch's forward and the last one's backward cross the other
  // p − 1 ranks: (p − 1) chunk passes (1/v of a stage's work under interleaving, Narayanan
  // §2.2.2) and their transfers — every virtual-stage boundary on the path (p·v − 1 of them for
  // the first forward), both ways.
  const double mean_pass = sum_pass / vstages;
  const double fill_drain = (p - 1) * mean_pass;
  const double transfers = p > 1 ? 2.0 * (double(vstages) - 1.0) * p2p_s : 0.0;
  const double pipeline = double(mbs) * busiest + fill_drain + transfers;

  // --- data parallelism
  // ---------------------------------------------------------------------------
  StepEstimate est;
  est.pipeline_s = pipeline;
  const double grad_bytes = cfg.memory.grad_bytes_per_param;
  const double bucket_params =
      c.dp_bucket_bytes > 0 ? c.dp_bucket_bytes / grad_bytes : std::max(40e6, 1e6 * c.dp);
  double barrier = 0;
  double after_barrier = 0;
  for (int s = 0; s < p; ++s) {
    // Stage s finishes its last backward s passes (and transfers) before stage 0 does.
    const double last_bwd = passes[size_t(s)].bwd_compute_s;
    double compute_done = pipeline;
    for (int r = 0; r < s; ++r) compute_done -= passes[size_t(r)].bwd_s + p2p_s;
    double reduced = compute_done;
    const std::vector<int> dp_group = layout.DpGroup(layout.GpuOf({0, s, 0}));
    const double stage_params = par::ParametersPerGpu(m, c, s);
    if (c.dp > 1) {
      const double chunk_params = stage_params / v;
      // As the step simulation: buckets only when overlapping (at most 4096 per chunk), else
      // one collective over each chunk's contiguous gradient buffer (Megatron's DDP).
      const int per_chunk =
          c.overlap_dp ? int(std::clamp(std::ceil(chunk_params / bucket_params), 1.0, 4096.0)) : 1;
      const double bytes = chunk_params * grad_bytes / per_chunk * nic_share;
      const comm::Op op = c.zero_stage >= 1 ? comm::Op::kReduceScatter : comm::Op::kAllReduce;
      Result<double> t_or = cache->CollectiveSeconds(topo, op, dp_group, bytes);
      if (!t_or.ok()) return t_or.status();
      const double t = *t_or;
      // Ready times of the buckets, in launch order, then one communicator serialises them.
      std::vector<double> ready;
      if (!c.overlap_dp) {
        ready.assign(size_t(int64_t(v) * per_chunk * (c.zero_stage >= 2 ? mbs : 1)), compute_done);
      } else if (c.zero_stage >= 2) {
        // pp = 1 (ZeRO-2/3 need it): forward, backward alternate; every backward's buckets.
        const double f = passes[0].fwd_s, b = passes[0].bwd_s;
        for (int64_t k = 0; k < mbs; ++k) {
          const double b_start = compute_done - double(mbs - k) * b - double(mbs - 1 - k) * f;
          for (int i = 0; i < per_chunk; ++i) {
            ready.push_back(b_start + b * (i + 1) / per_chunk);
          }
        }
      } else {
        // The last micro-batch's backward of each chunk produces that chunk's buckets; the v
        // chunks' last backwards run back to back at the end of the rank's schedule.
        for (int chunk = v - 1; chunk >= 0; --chunk) {
          const double b_end = compute_done - chunk * last_bwd;
          for (int i = 0; i < per_chunk; ++i) {
            ready.push_back(b_end - last_bwd + last_bwd * (i + 1) / per_chunk);
          }
        }
      }
      double t_free = 0;
      for (double r : ready) t_free = std::max(t_free, r) + t;
      reduced = std::max(compute_done, t_free);
    }
    barrier = std::max(barrier, reduced);
    const double opt_params = stage_params / (c.zero_stage >= 1 ? double(c.dp) : 1.0);
    double tail = par::OptimizerTimeSeconds(cfg.gpu, cfg.compute, opt_params,
                                            cfg.memory.step_grad_bytes_per_param > 0);
    const double opt = tail;
    if ((c.zero_stage == 1 || c.zero_stage == 2) && c.dp > 1) {
      Result<double> g = cache->CollectiveSeconds(topo, comm::Op::kAllGather, dp_group,
                                                  2.0 * stage_params * nic_share);
      if (!g.ok()) return g.status();
      tail += *g;
    }
    if (tail > after_barrier) {
      after_barrier = tail;
      est.optimizer_s = opt;
    }
  }
  est.time_s = barrier + after_barrier;
  est.exposed_dp_comm_s = est.time_s - pipeline - est.optimizer_s;
  const double n = layout.num_gpus();
  est.mfu = par::ModelFlopsPerIteration(m, c.global_batch) / (est.time_s * n * cfg.gpu.peak_flops);
  est.hfu = par::HardwareFlopsPerIteration(m, c.global_batch, c.recompute) /
            (est.time_s * n * cfg.gpu.peak_flops);
  return est;
}

}  // namespace trainsim::sweep
