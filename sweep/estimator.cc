#include "sweep/estimator.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "parallelism/compute.h"
#include "parallelism/layout.h"
#include "parallelism/memory.h"
#include "parallelism/model.h"
#include "step/comm_sm_share.h"
#include "step/flex_dispatch.h"
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
    double s = 0;
    for (const std::vector<int>& gpus : step::TimedGroups(op, group_)) {
      Result<double> t = cache_->CollectiveSeconds(*topo_, op, gpus, bytes);
      if (!t.ok()) return t.status();
      s = std::max(s, *t);
    }
    return s;
  }

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
  // Built under the lock: once per node count, and every estimate needs it first.
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topologies_.find(spec.nodes);
  if (it != topologies_.end()) return it->second.get();
  Result<comm::Topology> t = comm::Topology::Build(spec);
  if (!t.ok()) return t.status();
  auto owned = std::make_unique<comm::Topology>(std::move(*t));
  const comm::Topology* raw = owned.get();
  topologies_[spec.nodes] = std::move(owned);
  return raw;
}

template <typename Use>
auto EstimatorCache::WithEntry(const comm::Topology& topo, comm::Op op,
                               const std::vector<int>& gpus, double bytes, Use use) {
  const int stride = gpus[1] - gpus[0];
  bool arithmetic = true;
  for (size_t i = 1; i < gpus.size(); ++i) arithmetic &= gpus[i] - gpus[i - 1] == stride;
  const comm::CollectiveSpec spec{op, comm::Algo::kAuto, gpus, uint64_t(bytes)};
  auto compute = [&](Entry* e) {
    Result<comm::CollectiveEstimate> est = comm::EstimateCollective(topo, spec);
    e->status = est.ok() ? Status::Ok() : est.status();
    if (!est.ok()) return;
    e->seconds = est->time.seconds();
    e->algo = est->algo;
    e->protocol = est->protocol;
    e->nodes = topo.NodesSpanned(gpus);
  };
  Entry uncached;
  Entry* entry = &uncached;
  if (arithmetic) {
    const auto key =
        std::make_tuple(&topo, int(op), gpus[0], int(gpus.size()), stride, uint64_t(bytes));
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<Entry>& slot = collectives_[key];
    if (!slot) slot = std::make_unique<Entry>();
    entry = slot.get();  // entries are never erased, so the pointer outlives the lock
  }
  // The first caller computes; one that comes while it does waits for its value.
  std::call_once(entry->once, compute, entry);
  return use(static_cast<const Entry&>(*entry));
}

Result<double> EstimatorCache::CollectiveSeconds(const comm::Topology& topo, comm::Op op,
                                                 const std::vector<int>& gpus, double bytes) {
  if (gpus.size() <= 1 || bytes <= 0) return 0.0;
  return WithEntry(topo, op, gpus, bytes, [](const Entry& e) -> Result<double> {
    if (!e.status.ok()) return e.status;
    return e.seconds;
  });
}

Result<double> EstimatorCache::CollectiveShare(const step::StepConfig& cfg,
                                               const comm::Topology& topo, comm::Op op,
                                               const std::vector<int>& gpus, double bytes) {
  if (gpus.size() <= 1 || bytes <= 0) return 0.0;
  return WithEntry(topo, op, gpus, bytes, [&](const Entry& e) -> Result<double> {
    if (!e.status.ok()) return e.status;
    return step::CollectiveSmShare(cfg, op, e.algo, e.protocol, int(gpus.size()), e.nodes, bytes);
  });
}

namespace {

// What the parts of one estimate share.
struct Estimate {
  Estimate(const step::StepConfig& config, const comm::Topology& topology,
           const par::Layout& layout_in, EstimatorCache* cache_in)
      : cfg(config),
        c(config.parallel),
        topo(topology),
        layout(layout_in),
        cache(cache_in),
        p(config.parallel.pp),
        v(step::ChunksPerRank(config.parallel)),
        vstages(p * v),
        mbs(config.parallel.num_micro_batches()),
        nic_share(step::NicShare(config.parallel, topology.spec())) {}
  const step::StepConfig& cfg;
  const par::ParallelConfig& c;
  const comm::Topology& topo;
  const par::Layout& layout;
  EstimatorCache* cache;
  int p = 1, v = 1, vstages = 1;
  int64_t mbs = 1;
  int nic_share = 1;
  std::vector<step::ChunkCost> costs;
  std::vector<double> zero3_gather;  // per stage
  std::vector<Pass> passes;          // per virtual stage
  double p2p_s = 0, p2p_latency_s = 0;
  double pipeline_s = 0;
  std::vector<double> compute_done;  // per stage
  bool replay = false;
  PipelineReplay replayed;
};

// Per-chunk passes: the step simulation's own costs (step/pass_costs.h).
Status EstimatePasses(Estimate& e) {
  const step::StepConfig& cfg = e.cfg;
  // TP collectives as the step simulation times them: the calibration's measured curve where it
  // covers them, else comm's closed form (memoised across layouts by the cache).
  CachedTpTimer cached(e.cache, &e.topo, e.layout.TpGroup(0));
  CachedTpTimer cp(e.cache, &e.topo, e.layout.CpGroup(0));
  CachedTpTimer ep(e.cache, &e.topo, e.layout.EpGroup(0));
  CachedTpTimer etp(e.cache, &e.topo, step::ExpertTpGroup(e.c));
  CachedTpTimer ep_node(e.cache, &e.topo, step::NvlinkPeers(e.topo, e.layout.EpGroup(0)));
  std::optional<step::CalibratedTpTimer> calibrated;
  if (cfg.calibration) calibrated.emplace(&e.topo, e.layout.TpGroup(0), cfg.calibration.get());
  step::TpCollectiveTimer* tp =
      calibrated ? static_cast<step::TpCollectiveTimer*>(&*calibrated) : &cached;
  const step::GroupTimers timers{tp, e.c.cp > 1 ? &cp : nullptr, e.c.ep > 1 ? &ep : nullptr,
                                 e.c.etp > 1 ? &etp : nullptr, e.c.ep > 1 ? &ep_node : nullptr};
  Result<std::vector<step::ChunkCost>> costs =
      step::ChunkCosts(cfg, step::GemmCalibrationOf(cfg), timers);
  if (!costs.ok()) return costs.status();
  e.costs = std::move(*costs);
  // ZeRO-3 / FSDP: each pass waits for its chunk's first layer's gather over DP × CP; the other
  // layers' gathers are prefetched under the pass (as simulated, step/gradient_sync.h).
  std::vector<double> gather_first(size_t(e.p), 0.0), gather_rest(size_t(e.p), 0.0);
  // The SMs the prefetched gathers and (ZeRO-2/3) each backward's bucket reductions take from
  // the pass beside them (step/comm_sm_share.h), and those reductions' time per backward.
  std::vector<double> gather_share(size_t(e.p), 0.0), bucket_share(size_t(e.p), 0.0);
  std::vector<double> bucket_s(size_t(e.p), 0.0), bucket_under(size_t(e.p), 0.0);
  std::vector<int> bucket_n(size_t(e.p), 1);  // buckets per backward
  for (int s = 0; s < e.p && e.c.zero_stage >= 2; ++s) {
    const int gpu = e.layout.GpuOf({0, s, 0});
    const step::GradientBuckets b = step::PlanGradientBuckets(cfg, s, e.nic_share);
    const std::vector<int> group = step::DenseShardGroup(e.layout, gpu);
    const std::vector<int> replicas = step::ShardReplicaGroup(e.layout, gpu);
    // The dense part, then with hybrid sharding the shard's all-reduce across the groups, then
    // the experts' part over expert-DP (as GradientSync::RunBucket runs them).
    const std::vector<int> experts =
        b.expert_bytes > 0 ? e.layout.ExpertDpGroup(gpu) : std::vector<int>();
    const std::pair<comm::Op, double> parts[] = {
        {b.op, b.bytes},
        {comm::Op::kAllReduce, b.bytes / double(group.size())},
        {b.op, b.expert_bytes}};
    double lost = 0;
    for (int i = 0; i < 3; ++i) {
      const std::vector<int>& g = i == 0 ? group : i == 1 ? replicas : experts;
      Result<double> t = e.cache->CollectiveSeconds(e.topo, parts[i].first, g, parts[i].second);
      Result<double> share =
          e.cache->CollectiveShare(cfg, e.topo, parts[i].first, g, parts[i].second);
      if (!t.ok() || !share.ok()) return !t.ok() ? t.status() : share.status();
      bucket_s[size_t(s)] += *t * b.per_chunk;
      lost += *t * b.per_chunk * *share;
    }
    bucket_share[size_t(s)] = bucket_s[size_t(s)] > 0 ? lost / bucket_s[size_t(s)] : 0.0;
    bucket_under[size_t(s)] = double(b.per_chunk - 1) / b.per_chunk;
    bucket_n[size_t(s)] = b.per_chunk;
  }
  if (e.c.zero_stage >= 3 && e.c.dp * e.c.cp > 1) {
    const int layers = std::max(1, int(std::lround(double(cfg.model.num_layers) / e.vstages)));
    for (int s = 0; s < e.p; ++s) {
      const int gpu = e.layout.GpuOf({0, s, 0});
      const std::vector<int> group = step::DenseShardGroup(e.layout, gpu);
      const step::Zero3Gather bytes = step::Zero3PassGather(cfg, s, e.nic_share);
      Result<double> first =
          e.cache->CollectiveSeconds(e.topo, comm::Op::kAllGather, group, bytes.dense / layers);
      if (!first.ok()) return first.status();
      Result<double> rest = e.cache->CollectiveSeconds(
          e.topo, comm::Op::kAllGather, group, layers > 1 ? bytes.dense - bytes.dense / layers : 0);
      if (!rest.ok()) return rest.status();
      // (The expert DP group is built only when there are expert bytes: a dense model has none.)
      Result<double> experts =
          bytes.expert > 0 ? e.cache->CollectiveSeconds(e.topo, comm::Op::kAllGather,
                                                        e.layout.ExpertDpGroup(gpu), bytes.expert)
                           : Result<double>(0.0);
      if (!experts.ok()) return experts.status();
      gather_first[size_t(s)] = *first;
      gather_rest[size_t(s)] = *rest + *experts;
      Result<double> share =
          e.cache->CollectiveShare(cfg, e.topo, comm::Op::kAllGather, group, bytes.dense / layers);
      if (!share.ok()) return share.status();
      gather_share[size_t(s)] = *share;
    }
  }
  e.zero3_gather = gather_first;
  e.passes.resize(size_t(e.vstages));
  for (int j = 0; j < e.vstages; ++j) {
    const step::ChunkCost& k = e.costs[size_t(j)];
    const size_t s = size_t(j % e.p);
    const double fwd = k.fwd_compute_s + k.fwd_comm_s(), bwd = k.bwd_compute_s + k.bwd_comm_s();
    // Only the pass's compute loses SMs, not its exposed layer collectives (as simulated).
    const double cf = fwd > 0 ? k.fwd_compute_s / fwd : 0, cb = bwd > 0 ? k.bwd_compute_s / bwd : 0;
    const step::OverlapCost f = step::OverlapBeside(gather_rest[s], fwd, cf * gather_share[s]);
    const step::OverlapCost b = step::OverlapBeside(gather_rest[s], bwd, cb * gather_share[s]);
    const double fwd_all = fwd + f.slowed + f.exposed;
    // The first bucket is ready 1/n into the backward, so the reductions run under the rest;
    // the last is ready at its end and runs after it, beside no compute (the drain below).
    double bwd_all = bwd + b.slowed + b.exposed +
                     step::OverlapBeside(bucket_s[s] * bucket_under[s], bwd * bucket_under[s],
                                         cb * bucket_share[s])
                         .slowed;
    // ZeRO-2/3: the backward ends once its buckets are reduced (GradientSync::DrainsEachBackward).
    // Bucket i of n is ready i/n into it and they reduce one after another, T = bucket_s / n
    // each: the last ends at max(end + T, end / n + n·T).
    if (bucket_s[s] > 0) {
      const double n = bucket_n[s];
      bwd_all = std::max(bwd_all + bucket_s[s] / n, bwd_all / n + bucket_s[s]);
    }
    e.passes[size_t(j)].fwd_s = fwd_all + gather_first[s];
    e.passes[size_t(j)].bwd_s = bwd_all + gather_first[s];
    e.passes[size_t(j)].bwd_compute_s = bwd_all;
  }
  return Status::Ok();
}

// The pipeline: when each stage's last task ends.
Status EstimatePipeline(Estimate& e) {
  const int p = e.p, vstages = e.vstages;
  // A stage-to-stage transfer as the step simulation sends it (step/pipeline.cc, StartSend): one
  // flow of 1/t of the boundary activation with the scatter/gather optimisation or SP, times
  // the NIC sharing, at the idle path's narrowest link, then the path's latency — not NCCL's
  // send/recv closed form, whose launch latency the simulation does not charge: blocking
  // rendezvous turn on tens of microseconds.
  if (p > 1) {
    const std::vector<comm::LinkId> route =
        e.topo.Route(e.layout.GpuOf({0, 0, 0}), e.layout.GpuOf({0, 1, 0}));
    const double bytes = double(uint64_t(step::PipelineSendBytes(e.cfg, e.nic_share)));
    e.p2p_latency_s = e.topo.PathLatency(route).seconds();
    e.p2p_s = bytes / e.topo.PathBandwidth(route) + e.p2p_latency_s;
  }
  // Blocking sends under interleaving: the rendezvous waits have no closed form, so the
  // schedule is replayed task by task on the idle network (sweep/pipeline_replay.h). So are
  // uneven pipelines (first/last stage layers): with stages of different work the light end
  // stages run ahead during warm-up and cool-down, which m × busiest + (p − 1) mean passes
  // overstates (by 3.6% on 6 + 9 + 9 + 6 layers, m = 2p; tests/sweep/estimator_test.cc).
  const bool uneven = e.c.first_stage_layers >= 0 || e.c.last_stage_layers >= 0;
  e.replay = p > 1 && ((!e.c.p2p_overlapped() && e.v > 1) || uneven);
  if (e.replay) {
    std::vector<ReplayPass> rp(static_cast<size_t>(vstages));
    for (int j = 0; j < vstages; ++j) {
      const double z3 = e.zero3_gather[size_t(j % p)];
      rp[size_t(j)] = {z3, e.passes[size_t(j)].fwd_s - z3, e.passes[size_t(j)].bwd_s - z3};
    }
    e.replayed = ReplayPipeline(e.c, rp, e.p2p_s, e.p2p_latency_s);
    e.compute_done = e.replayed.compute_done_s;
    e.pipeline_s = *std::max_element(e.compute_done.begin(), e.compute_done.end());
    return Status::Ok();
  }
  // Work of one micro-batch on each rank (all its chunks), the busiest rank, and one chunk pass.
  std::vector<double> rank_work(size_t(p), 0.0);
  double sum_pass = 0;
  for (int j = 0; j < vstages; ++j) {
    const double w = e.passes[size_t(j)].fwd_s + e.passes[size_t(j)].bwd_s;
    rank_work[size_t(j % p)] += w;
    // Blocking sends (ParallelConfig::overlap_p2p false): each of the chunk's sends — its
    // output forward unless it is the last virtual stage, its input gradient backward unless it
    // is the first — keeps the rank busy until it drains.
    if (!e.c.p2p_overlapped() && p > 1) {
      rank_work[size_t(j % p)] += ((j < vstages - 1) + (j > 0)) * e.p2p_s;
    }
    sum_pass += w;
  }
  const double busiest = *std::max_element(rank_work.begin(), rank_work.end());
  // Fill and drain: the first micro-batch's forward and the last one's backward cross the other
  // p − 1 ranks: (p − 1) chunk passes (1/v of a stage's work under interleaving, Narayanan
  // §2.2.2) and their transfers — every virtual-stage boundary on the path (p·v − 1 of them for
  // the first forward), both ways.
  const double mean_pass = sum_pass / vstages;
  const double fill_drain = (p - 1) * mean_pass;
  const double transfers = p > 1 ? 2.0 * (double(vstages) - 1.0) * e.p2p_s : 0.0;
  e.pipeline_s = double(e.mbs) * busiest + fill_drain + transfers;
  // Stage s finishes its last backward s passes (and transfers) before stage 0 does.
  e.compute_done.assign(size_t(p), e.pipeline_s);
  for (int s = 1; s < p; ++s) {
    e.compute_done[size_t(s)] =
        e.compute_done[size_t(s - 1)] - (e.passes[size_t(s - 1)].bwd_s + e.p2p_s);
  }
  return Status::Ok();
}

// When stage s's gradient buckets become ready, in launch order.
std::vector<double> BucketReadyTimes(const Estimate& e, int s, const step::GradientBuckets& b) {
  const double last_bwd = e.passes[size_t(s)].bwd_compute_s;
  const double done = e.compute_done[size_t(s)];
  const int per_chunk = b.per_chunk;
  std::vector<double> ready;
  if (!e.c.overlap_dp) {
    ready.assign(size_t(b.count), done);
  } else if (e.replay) {
    for (const auto& [start, dur] : e.replayed.bucket_passes[size_t(s)]) {
      for (int i = 0; i < per_chunk; ++i) ready.push_back(start + dur * (i + 1) / per_chunk);
    }
  } else {
    // The last micro-batch's backward of each chunk produces that chunk's buckets; the v
    // chunks' last backwards run back to back at the end of the rank's schedule.
    for (int chunk = e.v - 1; chunk >= 0; --chunk) {
      const double b_end = done - chunk * last_bwd;
      for (int i = 0; i < per_chunk; ++i) {
        ready.push_back(b_end - last_bwd + last_bwd * (i + 1) / per_chunk);
      }
    }
  }
  return ready;
}

// Data parallelism: the buckets reduced one after another on one communicator, the tied
// embedding, the optimizer and the ZeRO-1/2 weight all-gather.
Status EstimateDataParallel(const Estimate& e, StepEstimate* est) {
  const par::ParallelConfig& c = e.c;
  double barrier = 0;
  double after_barrier = 0;
  // Without ZeRO-2/3 the buckets reduce under each stage's last backwards, which lose their
  // SMs (step/comm_sm_share.h); a backward's end releases the previous stage's, so the loss
  // accumulates towards the first stage.
  std::vector<double> slowed(size_t(e.p) + 1, 0.0);
  for (int s = e.p - 1; s >= 0 && c.overlap_dp && c.zero_stage < 2; --s) {
    const std::vector<int> group = step::DenseShardGroup(e.layout, e.layout.GpuOf({0, s, 0}));
    const step::GradientBuckets b = step::PlanGradientBuckets(e.cfg, s, e.nic_share);
    Result<double> t = e.cache->CollectiveSeconds(e.topo, b.op, group, b.bytes);
    Result<double> share = e.cache->CollectiveShare(e.cfg, e.topo, b.op, group, b.bytes);
    if (!t.ok() || !share.ok()) return !t.ok() ? t.status() : share.status();
    const double under = e.v * e.passes[size_t(s)].bwd_compute_s;
    slowed[size_t(s)] =
        slowed[size_t(s) + 1] + step::OverlapBeside(*t * double(b.count), under, *share).slowed;
  }
  for (int s = 0; s < e.p; ++s) {
    const double done = e.compute_done[size_t(s)];
    double reduced = done;
    const int gpu = e.layout.GpuOf({0, s, 0});
    const std::vector<int> dp_group = step::DenseShardGroup(e.layout, gpu);
    const std::vector<int> replica_group = step::ShardReplicaGroup(e.layout, gpu);
    const step::GradientBuckets buckets = step::PlanGradientBuckets(e.cfg, s, e.nic_share);
    const std::vector<int> expert_group =
        buckets.expert_bytes > 0 ? e.layout.ExpertDpGroup(gpu) : std::vector<int>();
    // ZeRO-2/3: each backward, the last included, has drained its buckets in the pass
    // (EstimatePasses), so the stage is reduced when its compute is done.
    const bool drained = c.zero_stage >= 2;
    if (buckets.count > 0 && !drained) {
      Result<double> t = e.cache->CollectiveSeconds(e.topo, buckets.op, dp_group, buckets.bytes);
      if (!t.ok()) return t.status();
      Result<double> t_rep = e.cache->CollectiveSeconds(e.topo, comm::Op::kAllReduce, replica_group,
                                                        buckets.bytes / double(dp_group.size()));
      if (!t_rep.ok()) return t_rep.status();
      Result<double> t_exp =
          e.cache->CollectiveSeconds(e.topo, buckets.op, expert_group, buckets.expert_bytes);
      if (!t_exp.ok()) return t_exp.status();
      const double per_bucket = *t + *t_rep + *t_exp;
      double t_free = 0;
      for (double r : BucketReadyTimes(e, s, buckets)) t_free = std::max(t_free, r) + per_bucket;
      reduced = std::max(done + slowed[size_t(s)], t_free);
    }
    barrier = std::max(barrier, reduced);
    const double opt = step::OptimizerSeconds(e.cfg, s);
    double tail = opt;
    if ((c.zero_stage == 1 || c.zero_stage == 2) && buckets.count > 0) {
      Result<double> g =
          e.cache->CollectiveSeconds(e.topo, comm::Op::kAllGather, dp_group,
                                     step::ZeroWeightGatherBytes(e.cfg, s, e.nic_share));
      if (!g.ok()) return g.status();
      Result<double> ge =
          e.cache->CollectiveSeconds(e.topo, comm::Op::kAllGather, expert_group,
                                     step::ZeroExpertWeightGatherBytes(e.cfg, s, e.nic_share));
      if (!ge.ok()) return ge.status();
      double gather = *g + *ge;
      if (c.overlap_param_gather) {
        double fwd = 0;
        for (int j = s; j < e.vstages; j += e.p) fwd += e.passes[size_t(j)].fwd_s;
        Result<double> share =
            e.cache->CollectiveShare(e.cfg, e.topo, comm::Op::kAllGather, dp_group,
                                     step::ZeroWeightGatherBytes(e.cfg, s, e.nic_share));
        if (!share.ok()) return share.status();
        const step::OverlapCost o = step::OverlapBeside(gather, fwd, *share);
        gather = o.slowed + o.exposed;
      }
      tail += gather;
    }
    if (tail > after_barrier) {
      after_barrier = tail;
      est->optimizer_s = opt;
    }
  }
  // With PP > 1 the first and last stages all-reduce the tied embedding's gradient once every
  // stage is reduced, before the gradient-norm barrier releases the optimizers.
  double tied_embedding = 0;
  if (e.p > 1 && e.cfg.model.tied_embeddings) {
    Result<double> t = e.cache->CollectiveSeconds(
        e.topo, comm::Op::kAllReduce, {e.layout.GpuOf({0, 0, 0}), e.layout.GpuOf({0, e.p - 1, 0})},
        step::TiedEmbeddingBytes(e.cfg, e.nic_share));
    if (!t.ok()) return t.status();
    tied_embedding = *t;
  }
  est->time_s = barrier + tied_embedding + after_barrier;
  est->exposed_dp_comm_s = est->time_s - e.pipeline_s - est->optimizer_s;
  return Status::Ok();
}

}  // namespace

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
  Estimate e(cfg, topo, layout, cache);
  TRAINSIM_RETURN_IF_ERROR(EstimatePasses(e));
  TRAINSIM_RETURN_IF_ERROR(EstimatePipeline(e));
  StepEstimate est;
  est.pipeline_s = e.pipeline_s;
  TRAINSIM_RETURN_IF_ERROR(EstimateDataParallel(e, &est));
  const double n = layout.num_gpus();
  est.mfu = par::ModelFlopsPerIteration(m, c.global_batch) / (est.time_s * n * cfg.gpu.peak_flops);
  est.hfu = par::HardwareFlopsPerIteration(m, c.global_batch, c.recompute, c.recompute_modules,
                                           par::FullyRecomputedFraction(m, c)) /
            (est.time_s * n * cfg.gpu.peak_flops);
  return est;
}

}  // namespace trainsim::sweep
