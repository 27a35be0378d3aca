#include "step/pass_costs.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "parallelism/memory.h"
#include "parallelism/model.h"

namespace trainsim::step {
namespace {

using namespace parallelism;  // NOLINT: the closed-form models these costs come from

comm::Op ToCommOp(TpCollectiveKind k) {
  switch (k) {
    case TpCollectiveKind::kAllReduce:
      return comm::Op::kAllReduce;
    case TpCollectiveKind::kReduceScatter:
      return comm::Op::kReduceScatter;
    case TpCollectiveKind::kAllGather:
      return comm::Op::kAllGather;
    case TpCollectiveKind::kAllToAll:
      return comm::Op::kAllToAll;
    case TpCollectiveKind::kSendRecv:
      return comm::Op::kSendRecv;
  }
  return comm::Op::kAllReduce;
}

Result<double> SumTp(TpCollectiveTimer* timer, const std::vector<TpCollective>& cs, bool forward) {
  double total = 0;
  for (const TpCollective& c : cs) {
    if (c.forward != forward) continue;
    Result<double> s = timer->Seconds(ToCommOp(c.kind), c.bytes);
    if (!s.ok()) return s.status();
    total += *s;
  }
  return total;
}

double SumOps(const StepConfig& cfg, const GemmCalibration& cal, const std::vector<KernelOp>& ops,
              bool forward, bool selective_only = false) {
  double total = 0;
  for (const KernelOp& op : ops) {
    if (selective_only && !op.selective_recompute) continue;
    total += OpTimeSeconds(cfg.gpu, cfg.compute, op, forward, &cal);
  }
  return total;
}

}  // namespace

CalibratedTpTimer::CalibratedTpTimer(const comm::Topology* topo, std::vector<int> group,
                                     const comm::Calibration* calibration)
    : topo_(topo), group_(std::move(group)), cal_(calibration) {
  std::set<int> nodes;
  for (int g : group_) nodes.insert(topo_->node_of(g));
  nodes_ = int(nodes.size());
}

Result<double> CalibratedTpTimer::Seconds(comm::Op op, double bytes) {
  if (group_.size() <= 1 || bytes <= 0) return 0.0;
  const auto key = std::make_pair(int(op), uint64_t(bytes));
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const comm::CollectiveSpec spec{op, comm::Algo::kAuto, group_, uint64_t(bytes)};
  Result<comm::CollectiveTiming> est = comm::EstimateCollectiveCalibrated(*topo_, spec, cal_);
  if (!est.ok()) return est.status();
  const double s = est->time.seconds();
  cache_[key] = s;
  std::string name(comm::OpName(op));
  name.append(" ").append(std::to_string(group_.size())).append(" ranks");
  if (nodes_ > 1) name.append(" over ").append(std::to_string(nodes_)).append(" nodes");
  auto u = std::find_if(use_.begin(), use_.end(), [&](const auto& x) { return x.first == name; });
  if (u == use_.end()) {
    use_.emplace_back(name, est->calibrated);
  } else {
    u->second = u->second && est->calibrated;
  }
  return s;
}

GemmCalibration GemmCalibrationOf(const StepConfig& cfg) {
  return {cfg.calibration.get(), cfg.gemm_dtype};
}

int ChunksPerRank(const ParallelConfig& c) {
  return c.schedule == PipelineSchedule::kInterleaved1F1B ? c.virtual_stages : 1;
}

int NicShare(const ParallelConfig& c, const comm::TopologySpec& topology) {
  const int share = std::max(1, topology.gpus_per_node / std::max(1, topology.nics_per_node));
  return std::min(c.tp, share);
}

Result<std::vector<ChunkCost>> ChunkCosts(const StepConfig& cfg, const GemmCalibration& gemm,
                                          TpCollectiveTimer* tp) {
  const ParallelConfig& c = cfg.parallel;
  const ModelSpec& m = cfg.model;
  const TensorSplit split{c.tp, c.sequence_parallel};
  const int vstages = c.pp * ChunksPerRank(c);
  const double layers = double(m.num_layers) / vstages;

  const std::vector<KernelOp> layer = LayerOps(m, split, c.micro_batch);
  const auto layer_tp = LayerTpCollectives(m, split, c.micro_batch);
  const double l_fwd = SumOps(cfg, gemm, layer, true), l_bwd = SumOps(cfg, gemm, layer, false);
  double l_recompute = 0;
  if (c.recompute == Recompute::kFull) l_recompute = l_fwd;
  if (c.recompute == Recompute::kSelective) l_recompute = SumOps(cfg, gemm, layer, true, true);
  Result<double> l_tp_fwd = SumTp(tp, layer_tp, true);
  if (!l_tp_fwd.ok()) return l_tp_fwd.status();
  Result<double> l_tp_bwd = SumTp(tp, layer_tp, false);
  if (!l_tp_bwd.ok()) return l_tp_bwd.status();
  const double l_tp_recompute = c.recompute == Recompute::kFull ? *l_tp_fwd : 0.0;

  const auto emb = EmbeddingOps(m, split, c.micro_batch);
  const auto head = HeadOps(m, split, c.micro_batch);
  Result<double> emb_tp = SumTp(tp, EmbeddingTpCollectives(m, split, c.micro_batch), true);
  if (!emb_tp.ok()) return emb_tp.status();
  const auto head_tp_list = HeadTpCollectives(m, split, c.micro_batch);
  Result<double> head_tp_fwd = SumTp(tp, head_tp_list, true);
  if (!head_tp_fwd.ok()) return head_tp_fwd.status();
  Result<double> head_tp_bwd = SumTp(tp, head_tp_list, false);
  if (!head_tp_bwd.ok()) return head_tp_bwd.status();
  // Narayanan §4.1 scatter/gather: the receiver all-gathers the 1/t slices over NVLink.
  double pp_gather = 0;
  if (c.pp > 1 && c.pp_scatter_gather && c.tp > 1 && !c.sequence_parallel) {
    Result<double> g = tp->Seconds(
        comm::Op::kAllGather, double(c.micro_batch) * m.seq_len * m.hidden * m.bytes_per_element);
    if (!g.ok()) return g.status();
    pp_gather = *g;
  }

  std::vector<ChunkCost> out(vstages);
  for (int j = 0; j < vstages; ++j) {
    ChunkCost& k = out[j];
    k.fwd_compute_s = layers * l_fwd;
    k.fwd_tp_s = layers * *l_tp_fwd;
    k.bwd_compute_s = layers * (l_bwd + l_recompute);
    k.bwd_tp_s = layers * (*l_tp_bwd + l_tp_recompute);
    if (j == 0) {
      k.fwd_compute_s += SumOps(cfg, gemm, emb, true);
      k.bwd_compute_s += SumOps(cfg, gemm, emb, false);
      k.fwd_tp_s += *emb_tp;
    } else {
      k.fwd_tp_s += pp_gather;
    }
    if (j == vstages - 1) {
      k.fwd_compute_s += SumOps(cfg, gemm, head, true);
      k.bwd_compute_s += SumOps(cfg, gemm, head, false);
      k.fwd_tp_s += *head_tp_fwd;
      k.bwd_tp_s += *head_tp_bwd;
    } else {
      k.bwd_tp_s += pp_gather;
    }
  }
  return out;
}

double PipelineSendBytes(const StepConfig& cfg, int nic_share) {
  const ParallelConfig& c = cfg.parallel;
  double bytes =
      double(c.micro_batch) * cfg.model.seq_len * cfg.model.hidden * cfg.model.bytes_per_element;
  if ((c.pp_scatter_gather || c.sequence_parallel) && c.tp > 1) bytes /= c.tp;
  return bytes * nic_share;
}

GradientBuckets PlanGradientBuckets(const StepConfig& cfg, int stage, int nic_share) {
  const ParallelConfig& c = cfg.parallel;
  const int v = ChunksPerRank(c);
  const double grad_bytes = cfg.memory.grad_bytes_per_param;
  const double bucket_params = c.dp_bucket_bytes > 0
                                   ? c.dp_bucket_bytes / grad_bytes
                                   : std::max(40e6, 1e6 * c.dp);  // Megatron-LM default
  const double chunk_params = ParametersPerGpu(cfg.model, c, stage) / v;
  GradientBuckets b;
  // Without overlap the reduction runs after the last backward over the contiguous gradient
  // buffer as one collective per chunk (Megatron-LM's DDP, allreduce_gradients); NCCL pipelines
  // it internally, so splitting it would only add launch latencies. At most kMaxBucketsPerChunk
  // buckets (larger ones beyond that): finer buckets add no overlap once each is small next to a
  // layer's backward, only events.
  constexpr double kMaxBucketsPerChunk = 4096;
  b.per_chunk =
      c.overlap_dp
          ? int(std::clamp(std::ceil(chunk_params / bucket_params), 1.0, kMaxBucketsPerChunk))
          : 1;
  b.bytes = chunk_params * grad_bytes / b.per_chunk * nic_share;
  b.op = c.zero_stage >= 1 ? comm::Op::kReduceScatter : comm::Op::kAllReduce;
  // ZeRO-2/3 reduce-scatter every micro-batch's gradients (they cannot be kept whole);
  // otherwise gradients accumulate locally and are reduced once.
  const int64_t rounds = c.zero_stage >= 2 ? c.num_micro_batches() : 1;
  b.count = c.dp == 1 ? 0 : rounds * v * b.per_chunk;
  return b;
}

double ZeroWeightGatherBytes(const StepConfig& cfg, int stage, int nic_share) {
  return 2.0 * ParametersPerGpu(cfg.model, cfg.parallel, stage) * nic_share;
}

double Zero3PassGatherBytes(const StepConfig& cfg, int stage, int nic_share) {
  return 2.0 * ParametersPerGpu(cfg.model, cfg.parallel, stage) / ChunksPerRank(cfg.parallel) *
         nic_share;
}

double TiedEmbeddingBytes(const StepConfig& cfg, int nic_share) {
  return double(cfg.model.vocab) / cfg.parallel.tp * cfg.model.hidden *
         cfg.memory.grad_bytes_per_param * nic_share;
}

double OptimizerSeconds(const StepConfig& cfg, int stage) {
  const ParallelConfig& c = cfg.parallel;
  const double params =
      ParametersPerGpu(cfg.model, c, stage) / (c.zero_stage >= 1 ? double(c.dp) : 1.0);
  return OptimizerTimeSeconds(cfg.gpu, cfg.compute, params,
                              cfg.memory.step_grad_bytes_per_param > 0);
}

}  // namespace trainsim::step
