#include "sweep/estimator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "parallelism/compute.h"
#include "parallelism/layout.h"
#include "parallelism/memory.h"
#include "parallelism/model.h"
#include "step/pass_costs.h"
#include "sweep/pipeline_replay.h"

namespace trainsim::sweep {
namespace {

namespace par = trainsim::parallelism;

// The TP group's collectives through the cache (closed form on the idle network).
class CachedTpTimer final : public step::TpCollectiveTimer {
 public:
  CachedTpTimer(EstimatorCache* cache, const comm::Topology* topo, std::vector<int> group)
      : cache_(cache), topo_(topo), group_(std::move(group)) {}
  Result<double> Seconds(comm::Op op, double bytes) override {
    return cache_->CollectiveSeconds(*topo_, op, group_, bytes);
  }
  const std::vector<int>& group() const { return group_; }

 private:
  EstimatorCache* cache_;
  const comm::Topology* topo_;
  std::vector<int> group_;
};

// One virtual stage's passes for one micro-batch (step::ChunkCost, added up).
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

  const int p = c.pp;
  const int v = step::ChunksPerRank(c);
  const int vstages = p * v;
  const int64_t mbs = c.num_micro_batches();
  const int nic_share = step::NicShare(c, topo.spec());

  // --- per-chunk passes: the step simulation's own costs (step/pass_costs.h) -----------------
  // TP collectives as the step simulation times them: the calibration's measured curve where it
  // covers them, else comm's closed form (memoised across layouts by the cache).
  CachedTpTimer cached(cache, &topo, layout.TpGroup(0));
  step::CalibratedTpTimer calibrated(&topo, layout.TpGroup(0), cfg.calibration.get());
  step::TpCollectiveTimer* tp =
      cfg.calibration ? static_cast<step::TpCollectiveTimer*>(&calibrated) : &cached;
  Result<std::vector<step::ChunkCost>> costs =
      step::ChunkCosts(cfg, step::GemmCalibrationOf(cfg), tp);
  if (!costs.ok()) return costs.status();
  // ZeRO-3 gathers each chunk's weights over DP before every pass (no prefetch, as simulated).
  std::vector<double> zero3_gather(size_t(p), 0.0);
  if (c.zero_stage >= 3 && c.dp > 1) {
    for (int s = 0; s < p; ++s) {
      Result<double> g = cache->CollectiveSeconds(topo, comm::Op::kAllGather,
                                                  layout.DpGroup(layout.GpuOf({0, s, 0})),
                                                  step::Zero3PassGatherBytes(cfg, s, nic_share));
      if (!g.ok()) return g.status();
      zero3_gather[size_t(s)] = *g;
    }
  }
  std::vector<Pass> passes(static_cast<size_t>(vstages));
  for (int j = 0; j < vstages; ++j) {
    const step::ChunkCost& k = (*costs)[size_t(j)];
    const double z3 = zero3_gather[size_t(j % p)];
    passes[size_t(j)].fwd_s = k.fwd_compute_s + k.fwd_tp_s + z3;
    passes[size_t(j)].bwd_s = k.bwd_compute_s + k.bwd_tp_s + z3;
    passes[size_t(j)].bwd_compute_s = k.bwd_compute_s + k.bwd_tp_s;
  }

  // --- pipeline
  // ----------------------------------------------------------------------------------- A
  // stage-to-stage transfer (the step simulation's flow: 1/t of the boundary activation with the
  // scatter/gather optimisation or SP, times the NIC sharing), closed form on the idle path.
  double p2p_s = 0;
  if (p > 1) {
    Result<double> t = cache->CollectiveSeconds(topo, comm::Op::kSendRecv,
                                                {layout.GpuOf({0, 0, 0}), layout.GpuOf({0, 1, 0})},
                                                step::PipelineSendBytes(cfg, nic_share));
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
  double pipeline = double(mbs) * busiest + fill_drain + transfers;
  // Stage s finishes its last backward s passes (and transfers) before stage 0 does.
  std::vector<double> compute_done(size_t(p), pipeline);
  for (int s = 1; s < p; ++s) {
    compute_done[size_t(s)] = compute_done[size_t(s - 1)] - (passes[size_t(s - 1)].bwd_s + p2p_s);
  }
  // Blocking sends under interleaving: the rendezvous waits have no closed form, so the
  // schedule is replayed task by task on the idle network (sweep/pipeline_replay.h).
  const bool replay = !c.overlap_p2p && v > 1 && p > 1;
  PipelineReplay replayed;
  if (replay) {
    std::vector<ReplayPass> rp(static_cast<size_t>(vstages));
    for (int j = 0; j < vstages; ++j) {
      const step::ChunkCost& k = (*costs)[size_t(j)];
      rp[size_t(j)] = {zero3_gather[size_t(j % p)], k.fwd_compute_s + k.fwd_tp_s,
                       k.bwd_compute_s + k.bwd_tp_s};
    }
    replayed = ReplayPipeline(c, rp, p2p_s);
    compute_done = replayed.compute_done_s;
    pipeline = *std::max_element(compute_done.begin(), compute_done.end());
  }

  // --- data parallelism
  // ---------------------------------------------------------------------------
  StepEstimate est;
  est.pipeline_s = pipeline;
  double barrier = 0;
  double after_barrier = 0;
  for (int s = 0; s < p; ++s) {
    const double last_bwd = passes[size_t(s)].bwd_compute_s;
    const double done = compute_done[size_t(s)];
    double reduced = done;
    const std::vector<int> dp_group = layout.DpGroup(layout.GpuOf({0, s, 0}));
    if (c.dp > 1) {
      const step::GradientBuckets buckets = step::PlanGradientBuckets(cfg, s, nic_share);
      const int per_chunk = buckets.per_chunk;
      Result<double> t_or = cache->CollectiveSeconds(topo, buckets.op, dp_group, buckets.bytes);
      if (!t_or.ok()) return t_or.status();
      const double t = *t_or;
      // Ready times of the buckets, in launch order, then one communicator serialises them.
      std::vector<double> ready;
      if (!c.overlap_dp) {
        ready.assign(size_t(buckets.count), done);
      } else if (replay) {
        for (const auto& [start, dur] : replayed.bucket_passes[size_t(s)]) {
          for (int i = 0; i < per_chunk; ++i) ready.push_back(start + dur * (i + 1) / per_chunk);
        }
      } else if (c.zero_stage >= 2) {
        // pp = 1 (ZeRO-2/3 need it): forward, backward alternate; every backward's buckets.
        const double f = passes[0].fwd_s, b = passes[0].bwd_s;
        for (int64_t k = 0; k < mbs; ++k) {
          const double b_start = done - double(mbs - k) * b - double(mbs - 1 - k) * f;
          for (int i = 0; i < per_chunk; ++i) {
            ready.push_back(b_start + b * (i + 1) / per_chunk);
          }
        }
      } else {
        // The last micro-batch's backward of each chunk produces that chunk's buckets; the v
        // chunks' last backwards run back to back at the end of the rank's schedule.
        for (int chunk = v - 1; chunk >= 0; --chunk) {
          const double b_end = done - chunk * last_bwd;
          for (int i = 0; i < per_chunk; ++i) {
            ready.push_back(b_end - last_bwd + last_bwd * (i + 1) / per_chunk);
          }
        }
      }
      double t_free = 0;
      for (double r : ready) t_free = std::max(t_free, r) + t;
      reduced = std::max(done, t_free);
    }
    barrier = std::max(barrier, reduced);
    const double opt = step::OptimizerSeconds(cfg, s);
    double tail = opt;
    if ((c.zero_stage == 1 || c.zero_stage == 2) && c.dp > 1) {
      Result<double> g = cache->CollectiveSeconds(topo, comm::Op::kAllGather, dp_group,
                                                  step::ZeroWeightGatherBytes(cfg, s, nic_share));
      if (!g.ok()) return g.status();
      tail += *g;
    }
    if (tail > after_barrier) {
      after_barrier = tail;
      est.optimizer_s = opt;
    }
  }
  // With PP > 1 the first and last stages all-reduce the tied embedding's gradient once every
  // stage is reduced, before the gradient-norm barrier releases the optimizers.
  double tied_embedding = 0;
  if (p > 1) {
    Result<double> t = cache->CollectiveSeconds(
        topo, comm::Op::kAllReduce, {layout.GpuOf({0, 0, 0}), layout.GpuOf({0, p - 1, 0})},
        step::TiedEmbeddingBytes(cfg, nic_share));
    if (!t.ok()) return t.status();
    tied_embedding = *t;
  }
  est.time_s = barrier + tied_embedding + after_barrier;
  est.exposed_dp_comm_s = est.time_s - pipeline - est.optimizer_s;
  const double n = layout.num_gpus();
  est.mfu = par::ModelFlopsPerIteration(m, c.global_batch) / (est.time_s * n * cfg.gpu.peak_flops);
  est.hfu = par::HardwareFlopsPerIteration(m, c.global_batch, c.recompute) /
            (est.time_s * n * cfg.gpu.peak_flops);
  return est;
}

}  // namespace trainsim::sweep
