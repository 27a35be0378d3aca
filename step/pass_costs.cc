#include "step/pass_costs.h"

#include <algorithm>
#include <cmath>

#include "parallelism/memory.h"
#include "parallelism/model.h"
#include "step/activation_offload.h"
#include "step/comm_sm_share.h"
#include "step/ep_overlap.h"
#include "step/flex_dispatch.h"
#include "step/priced_ops.h"

namespace trainsim::step {
namespace {

using namespace parallelism;  // NOLINT: the closed-form models these costs come from

// Kernels `ops` launch in one pass (forward, or backward).
// `only`: count only the ops some of these recompute modules re-run (0: every op).
double SumKernels(const std::vector<KernelOp>& ops, bool forward, uint32_t only = 0) {
  double n = 0;
  for (const KernelOp& op : ops) {
    if (only != 0 && !(op.recomputed_by & only)) continue;
    n += forward ? op.fwd_kernels : op.bwd_kernels;
  }
  return n;
}

double SumOps(const StepConfig& cfg, const GemmCalibration& cal, const std::vector<KernelOp>& ops,
              bool forward, uint32_t only = 0) {
  double total = 0;
  for (const KernelOp& op : ops) {
    if (only != 0 && !(op.recomputed_by & only)) continue;
    total += OpTimeSeconds(cfg.gpu, cfg.compute, op, forward, &cal);
  }
  return total;
}

}  // namespace

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

CalibratedTpTimer::CalibratedTpTimer(const comm::Topology* topo, std::vector<int> group,
                                     const comm::Calibration* calibration)
    : topo_(topo), group_(std::move(group)), cal_(calibration) {
  nodes_ = topo_->NodesSpanned(group_);
}

std::vector<std::vector<int>> TimedGroups(comm::Op op, const std::vector<int>& group) {
  if (op != comm::Op::kSendRecv || group.size() <= 2) return {group};
  std::vector<std::vector<int>> pairs;
  for (size_t i = 0; i < group.size(); ++i)
    pairs.push_back({group[i], group[(i + 1) % group.size()]});
  return pairs;
}

Result<double> CalibratedTpTimer::Seconds(comm::Op op, double bytes) {
  if (group_.size() <= 1 || bytes <= 0) return 0.0;
  const auto key = std::make_pair(int(op), uint64_t(bytes));
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  double s = 0;
  bool calibrated = true;
  for (const std::vector<int>& gpus : TimedGroups(op, group_)) {
    const comm::CollectiveSpec spec{op, comm::Algo::kAuto, gpus, uint64_t(bytes)};
    Result<comm::CollectiveTiming> est = comm::EstimateCollectiveCalibrated(*topo_, spec, cal_);
    if (!est.ok()) return est.status();
    s = std::max(s, est->time.seconds());
    calibrated = calibrated && est->calibrated;
  }
  cache_[key] = s;
  std::string name(comm::OpName(op));
  name.append(" ").append(std::to_string(group_.size())).append(" ranks");
  if (nodes_ > 1) name.append(" over ").append(std::to_string(nodes_)).append(" nodes");
  auto u = std::find_if(use_.begin(), use_.end(), [&](const auto& x) { return x.first == name; });
  if (u == use_.end()) {
    use_.emplace_back(name, calibrated);
  } else {
    u->second = u->second && calibrated;
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

TpCollectiveTimer* GroupTimers::For(CommGroup g) const {
  switch (g) {
    case CommGroup::kTp:
      return tp;
    case CommGroup::kCp:
      return cp;
    case CommGroup::kEp:
      return ep;
    case CommGroup::kEtp:
      return etp;
  }
  return nullptr;
}

namespace {

// One transformer layer's costs for one micro-batch (unslowed seconds).
struct LayerCost {
  double fwd = 0, bwd = 0, recompute = 0;   // compute
  double fwd_kernels = 0, bwd_kernels = 0;  // backward includes the recomputed kernels
  double tp_fwd = 0, tp_bwd = 0, cp_fwd = 0, cp_bwd = 0, ep_fwd = 0, ep_bwd = 0;
  // Exposed forward collectives that recomputation re-runs in the backward.
  double tp_re = 0, cp_re = 0, ep_re = 0;
  // The CP and EP collectives' bytes per rank and closed-form seconds before overlap
  // (ChunkCost::fwd_cp_bytes), and the share of them recomputation re-runs.
  double cp_bytes_fwd = 0, cp_bytes_bwd = 0, cp_raw_fwd = 0, cp_raw_bwd = 0;
  double cp_bytes_re = 0, cp_raw_re = 0;
  double ep_bytes_fwd = 0, ep_bytes_bwd = 0, ep_raw_fwd = 0, ep_raw_bwd = 0;
  double ep_bytes_re = 0, ep_raw_re = 0;
  // Of fwd, bwd and recompute: compute slowed by the overlapped collectives.
  double slow_fwd = 0, slow_bwd = 0, slow_recompute = 0;
};

double OpSeconds(const StepConfig& cfg, const GemmCalibration& cal,
                 const std::vector<KernelOp>& ops, const std::string& name, bool forward) {
  for (const KernelOp& op : ops) {
    if (op.name == name) return OpTimeSeconds(cfg.gpu, cfg.compute, op, forward, &cal);
  }
  return 0;
}

// The seconds of the TP-paired GEMMs as Transformer Engine's userbuffers run them (UbChunks:
// forward, or backward with the dgrad chunked and the wgrad whole), the chunks up to
// kUbComputeStreams at once. An FP8 model's casts are the whole GEMM's (TE casts the input and
// the weight once, not per chunk).
double ChunkedGemmSeconds(const StepConfig& cfg, const GemmCalibration& cal,
                          const std::vector<KernelOp>& ops, bool forward, int tp) {
  double total = 0;
  for (const KernelOp& op : ops) {
    if (!TpPairedGemm(op)) continue;
    const double whole = OpTimeSeconds(cfg.gpu, cfg.compute, op, forward, &cal);
    const int n = UbChunks(op, tp, forward, cfg.parallel.tp_overlap_rs_ring);
    if (n <= 1) {
      total += whole;
      continue;
    }
    const KernelOp chunks = TpChunksOf(op, n, cfg.model.bytes_per_element);
    const double chunked = OpTimeSeconds(cfg.gpu, cfg.compute, chunks, forward, &cal) -
                           parallelism::Fp8CastSeconds(cfg.gpu, cfg.compute, chunks, forward) +
                           parallelism::Fp8CastSeconds(cfg.gpu, cfg.compute, op, forward);
    total += forward ? chunked : 0.5 * (chunked + whole);
  }
  return total;
}

double PairedGemmSeconds(const StepConfig& cfg, const GemmCalibration& cal,
                         const std::vector<KernelOp>& ops, bool forward) {
  double total = 0;
  for (const KernelOp& op : ops) {
    if (TpPairedGemm(op)) total += OpTimeSeconds(cfg.gpu, cfg.compute, op, forward, &cal);
  }
  return total;
}

// Transformer Engine's userbuffers overlap (tp_comm_overlap, with sequence parallelism): each
// all-gather is a ring exchange of tp chunks under the GEMM that consumes them, each
// reduce-scatter is pipelined behind the GEMM that produces it. What stays exposed is the
// communication beyond (tp−1)/tp of the GEMM time, and at least one chunk (the exchange's
// fill or drain). The GEMMs lose the SMs the communication kernels occupy while they overlap.
struct UbOverlap {
  double exposed = 0;
  double compute_penalty = 0;
};
UbOverlap OverlapTp(double ag_s, double rs_s, double gemm_s, int tp, double sms, double rs_sms) {
  UbOverlap o;
  const double comm = ag_s + rs_s;
  if (comm <= 0) return o;
  const double hidden_under = gemm_s * (tp - 1) / tp;
  o.exposed = std::max(comm / tp, comm - hidden_under);
  const double overlapped = std::min(comm, hidden_under);
  const double sm_share = (ag_s * kUbAllGatherSms + rs_s * rs_sms) / comm / std::max(1.0, sms);
  o.compute_penalty = overlapped * sm_share / (1 - sm_share);
  return o;
}

// The SM share the overlapped layer collectives of `group` take (step/comm_sm_share.h): the CP
// ring's send/recv (its peers are tp ranks apart: on other nodes once TP fills a node), the EP
// all-to-all over its ep_nodes nodes, or HybridEP's own SMs with the FLEX dispatcher.
double OverlapShare(const StepConfig& cfg, CommGroup group) {
  const ParallelConfig& c = cfg.parallel;
  const NcclCtaLimits limits{cfg.nccl_min_ctas, cfg.nccl_max_ctas};
  const int nics = cfg.topology.nics_per_node;
  int ctas = 0;
  if (group == CommGroup::kCp) {
    ctas = NcclP2pCtas(cfg.gpu.arch, c.tp >= cfg.topology.gpus_per_node, nics, limits);
  } else if (group == CommGroup::kEp && c.moe_dispatcher == MoeDispatcher::kFlex) {
    ctas = FlexSms(c.moe_flex_sms, c.ep_nodes);
  } else if (group == CommGroup::kEp) {
    // All-to-all: NCCL's p2p channels, whatever the algorithm field and size say.
    return CollectiveSmShare(cfg, comm::Op::kAllToAll, comm::Algo::kRing, comm::Protocol::kSimple,
                             c.ep, c.ep_nodes, 0);
  }
  return SmShare(ctas, cfg.gpu.num_sms);
}

// Where an op of a MoE layer runs in Megatron-Core's combined 1F1B schedule plan
// (step/ep_overlap.h): the routed experts between dispatch and combine, the combine node's
// compute after its all-to-all, or the pre-dispatch node (everything else: attention, norms,
// shared experts, router, permutation).
enum class EpNode { kPreDispatch, kMlp, kCombinePost };
EpNode EpNodeOf(const KernelOp& op) {
  if (op.name.rfind("expert_", 0) == 0 || op.name == "moe_sort_chunks" ||
      op.name == "moe_unsort_chunks") {
    return EpNode::kMlp;
  }
  if (op.name == "moe_unpermute" || op.name.rfind("residual_add_2", 0) == 0) {
    return EpNode::kCombinePost;
  }
  return EpNode::kPreDispatch;
}

// Adds the layer's compute, node by node of the schedule plan, to `parts` (which holds its EP
// collectives). A matrix product's backward is its data
// gradient and its weight gradient, equal products (KernelOp: "two products of the same size");
// with --delay-wgrad-compute the experts' weight gradients run after their data gradients.
void AddEpComputeParts(const StepConfig& cfg, const GemmCalibration& cal,
                       const std::vector<KernelOp>& ops, EpOverlapParts* parts) {
  EpOverlapParts& p = *parts;
  for (const KernelOp& op : ops) {
    const double f = OpTimeSeconds(cfg.gpu, cfg.compute, op, true, &cal);
    const double b = OpTimeSeconds(cfg.gpu, cfg.compute, op, false, &cal);
    switch (EpNodeOf(op)) {
      case EpNode::kPreDispatch:
        p.pre_dispatch_fwd += f;
        p.pre_dispatch_bwd += b;
        break;
      case EpNode::kMlp:
        p.mlp_fwd += f;
        if (op.kind == OpKind::kGemm) {
          p.mlp_bwd_dgrad += b / 2;
          p.mlp_bwd_wgrad += b / 2;
        } else {
          p.mlp_bwd_dgrad += b;
        }
        break;
      case EpNode::kCombinePost:
        p.combine_post_fwd += f;
        p.combine_post_bwd += b;
        break;
    }
  }
}

Result<LayerCost> CostOfLayer(const StepConfig& cfg, const GemmCalibration& gemm,
                              const GroupTimers& timers, LayerKind kind) {
  const ParallelConfig& c = cfg.parallel;
  const ModelSpec& m = cfg.model;
  const bool moe = kind.moe && m.moe.enabled();
  const std::vector<KernelOp> ops = LayerOps(m, c.split(), c.micro_batch, kind);
  LayerCost lc;
  lc.fwd = SumOps(cfg, gemm, ops, true);
  lc.bwd = SumOps(cfg, gemm, ops, false);
  const uint32_t mods = c.recomputed_modules();
  const bool full_re = c.recompute == Recompute::kFull;
  if (c.recompute == Recompute::kFull) lc.recompute = lc.fwd;
  if (mods != 0) lc.recompute = SumOps(cfg, gemm, ops, true, mods);
  lc.fwd_kernels = SumKernels(ops, true);
  lc.bwd_kernels = SumKernels(ops, false) + (c.recompute == Recompute::kFull ? lc.fwd_kernels
                                             : mods != 0 ? SumKernels(ops, true, mods)
                                                         : 0.0);
  // Forward collectives' seconds per group [TP, CP, EP] (beyond any op they run under), all of
  // them and those the selective modules re-run.
  double fwd_raw[3] = {0, 0, 0}, re_raw[3] = {0, 0, 0};
  double ag[2] = {0, 0}, rs[2] = {0, 0};  // TP all-gathers / reduce-scatters, [fwd, bwd]
  EpOverlapParts ep_parts;                // EP collectives by node (moe_a2a_overlap)
  for (const TpCollective& col : LayerTpCollectives(m, c.split(), c.micro_batch, kind)) {
    TpCollectiveTimer* timer = timers.For(col.group);
    if (timer == nullptr) continue;
    Result<double> one = timer->Seconds(ToCommOp(col.kind), col.bytes);
    if (!one.ok()) return one.status();
    double t = *one * std::max(1, col.count);
    // HybridEP: its kernels' share of the all-to-all rate, and across nodes the NVLink
    // forwarding leg when it is the slower one (step/flex_dispatch.h).
    Result<double> priced = LayerCollectiveSeconds(col, t, [&](double bytes) -> Result<double> {
      if (timers.ep_node == nullptr) return 0.0;
      return timers.ep_node->Seconds(comm::Op::kAllToAll, bytes);
    });
    if (!priced.ok()) return priced.status();
    t = *priced;
    if (col.group == CommGroup::kCp || col.group == CommGroup::kEp) {
      const bool cp = col.group == CommGroup::kCp;
      const double sent = col.bytes * std::max(1, col.count);
      (col.forward ? (cp ? lc.cp_bytes_fwd : lc.ep_bytes_fwd)
                   : (cp ? lc.cp_bytes_bwd : lc.ep_bytes_bwd)) += sent;
      (col.forward ? (cp ? lc.cp_raw_fwd : lc.ep_raw_fwd) : (cp ? lc.cp_raw_bwd : lc.ep_raw_bwd)) +=
          t;
      if (col.forward && (full_re || (col.recomputed_by & mods))) {
        (cp ? lc.cp_bytes_re : lc.ep_bytes_re) += sent;
        (cp ? lc.cp_raw_re : lc.ep_raw_re) += t;
      }
    }
    if (!col.overlaps_op.empty()) {
      // The CP ring's K/V steps beside the attention blocks: the attention loses the SMs of
      // the send/recv kernel while the exchange runs (step/comm_sm_share.h).
      const double under = OpSeconds(cfg, gemm, ops, col.overlaps_op, col.forward);
      const OverlapCost o = OverlapBeside(t, under, OverlapShare(cfg, col.group));
      (col.forward ? lc.slow_fwd : lc.slow_bwd) += o.slowed;
      t = o.exposed;
    }
    const int dir = col.forward ? 0 : 1;
    const int g = col.group == CommGroup::kCp ? 1 : col.group == CommGroup::kEp ? 2 : 0;
    if (col.forward) fwd_raw[g] += t;
    if (col.forward && (col.recomputed_by & mods)) re_raw[g] += t;
    switch (col.group) {
      case CommGroup::kTp:
      case CommGroup::kEtp:
        if (c.tp_comm_overlap && col.group == CommGroup::kTp &&
            col.kind == TpCollectiveKind::kAllGather) {
          ag[dir] += t;
        } else if (c.tp_comm_overlap && col.group == CommGroup::kTp &&
                   col.kind == TpCollectiveKind::kReduceScatter) {
          rs[dir] += t;
        } else {
          (col.forward ? lc.tp_fwd : lc.tp_bwd) += t;
        }
        break;
      case CommGroup::kCp:
        (col.forward ? lc.cp_fwd : lc.cp_bwd) += t;
        break;
      case CommGroup::kEp: {
        (col.forward ? lc.ep_fwd : lc.ep_bwd) += t;
        // Dispatch (with the token counts and the probabilities) or combine, per direction.
        const bool combine = col.name.find("combine") != std::string::npos;
        (col.forward ? (combine ? ep_parts.combine_fwd : ep_parts.dispatch_fwd)
                     : (combine ? ep_parts.combine_bwd : ep_parts.dispatch_bwd)) += t;
        break;
      }
    }
  }
  const double sms = cfg.gpu.num_sms;
  if (c.moe_a2a_overlap && moe && lc.ep_fwd + lc.ep_bwd > 0) {
    // The combined 1F1B step runs one micro-batch's forward beside another's backward, each
    // all-to-all under the compute Megatron-Core pairs it with (step/ep_overlap.h). What the
    // merged step takes beyond the pair's compute stays exposed, split between the passes as
    // their traffic is.
    AddEpComputeParts(cfg, gemm, ops, &ep_parts);
    ep_parts.delay_wgrad = c.moe_delay_wgrad;
    const double ep = lc.ep_fwd + lc.ep_bwd;
    const double exposed = std::min(ep, ExposedEpSeconds(ep_parts));
    // The all-to-alls' hidden part runs beside the paired compute and takes its SMs.
    // It ends before the compute it hides under, which then makes up the lost work at full
    // rate: share × the hidden time (OverlapBeside with comm ≤ compute).
    const double slowed = (ep - exposed) * OverlapShare(cfg, CommGroup::kEp);
    lc.slow_fwd += slowed * lc.ep_fwd / ep;
    lc.slow_bwd += slowed * lc.ep_bwd / ep;
    lc.ep_fwd *= exposed / ep;
    lc.ep_bwd *= exposed / ep;
  }
  // The collectives' slowdown is compute time (the recomputed forward re-runs its own).
  lc.fwd += lc.slow_fwd;
  lc.bwd += lc.slow_bwd;
  if (c.recompute == Recompute::kFull) {
    lc.slow_recompute = lc.slow_fwd;
    lc.recompute += lc.slow_fwd;
  }
  if (c.tp_comm_overlap && c.tp > 1) {
    // The chunked GEMMs are what hides the communication, and their lower efficiency (each
    // chunk has m/tp rows: more wave quantisation) is a cost of the overlap.
    const double chunked_f = ChunkedGemmSeconds(cfg, gemm, ops, true, c.tp);
    const double chunked_b = ChunkedGemmSeconds(cfg, gemm, ops, false, c.tp);
    const double chunk_cost_f = chunked_f - PairedGemmSeconds(cfg, gemm, ops, true);
    const double chunk_cost_b = chunked_b - PairedGemmSeconds(cfg, gemm, ops, false);
    // The forward's reduce-scatters are the row-parallel GEMMs' (pipeline, or a ring exchange);
    // the backward's, the column-parallel dgrads' (bulk).
    const UbOverlap f = OverlapTp(ag[0], rs[0], chunked_f, c.tp, sms,
                                  c.tp_overlap_rs_ring ? kUbAllGatherSms : kUbReduceScatterSms);
    const UbOverlap b = OverlapTp(ag[1], rs[1], chunked_b, c.tp, sms, kUbReduceScatterSms);
    lc.tp_fwd += f.exposed;
    lc.fwd += f.compute_penalty + chunk_cost_f;
    lc.slow_fwd += f.compute_penalty;
    lc.tp_bwd += b.exposed;
    lc.bwd += b.compute_penalty + chunk_cost_b;
    lc.slow_bwd += b.compute_penalty;
    if (c.recompute == Recompute::kFull) {
      lc.recompute += f.compute_penalty + chunk_cost_f;
      lc.slow_recompute += f.compute_penalty;
    }
  }
  // Recomputed collectives are exposed as the forward's are: full recomputation re-runs them
  // all; selective modules their share of the forward's raw time.
  auto share = [&](int g) { return fwd_raw[g] > 0 ? re_raw[g] / fwd_raw[g] : 0.0; };
  const bool full = c.recompute == Recompute::kFull;
  lc.tp_re = lc.tp_fwd * (full ? 1.0 : share(0));
  lc.cp_re = lc.cp_fwd * (full ? 1.0 : share(1));
  lc.ep_re = lc.ep_fwd * (full ? 1.0 : share(2));
  return lc;
}

// Adds `w` times one layer's compute and exposed TP/CP/EP time to `to` (a ChunkCost or its
// per-layer ChunkCost::Layer, which share these fields); recomputation re-runs forward
// collectives in the backward.
template <typename Costs>
void AddLayerCost(const LayerCost& lc, double w, Costs* to) {
  to->fwd_compute_s += w * lc.fwd;
  to->bwd_compute_s += w * (lc.bwd + lc.recompute);
  to->fwd_tp_s += w * lc.tp_fwd;
  to->bwd_tp_s += w * (lc.tp_bwd + lc.tp_re);
  to->fwd_cp_s += w * lc.cp_fwd;
  to->bwd_cp_s += w * (lc.cp_bwd + lc.cp_re);
  to->fwd_ep_s += w * lc.ep_fwd;
  to->bwd_ep_s += w * (lc.ep_bwd + lc.ep_re);
}

// Adds the layers of `range` to the chunk's totals `k`, one cost per kind (kind_cost, by
// LayerKind::index()), and sets its per-layer dense and MoE shares; returns the chunk's MoE layer
// count and one MoE layer's forward kernels and seconds (their mean over kinds).
void AddChunkLayers(const StepConfig& cfg, const std::vector<LayerCost>& kind_cost,
                    const ChunkLayers& range, ChunkCost* chunk, double* n_moe_out,
                    double* moe_fwd_kernels_out, double* moe_fwd_s_out) {
  const ModelSpec& m = cfg.model;
  ChunkCost& k = *chunk;
  // Adds `lc` to the chunk's totals `n` times, and its share to the per-layer average `one`.
  // (`one` gets n times the cost when its class has several kinds, else the cost itself.)
  auto add = [&](const LayerCost& lc, double n, ChunkCost::Layer& one, double w) {
    AddLayerCost(lc, w, &one);
    AddLayerCost(lc, n, &k);
    k.fwd_slowed_s += n * lc.slow_fwd;
    k.bwd_slowed_s += n * (lc.slow_bwd + lc.slow_recompute);
    k.fwd_kernels += n * lc.fwd_kernels;
    k.bwd_kernels += n * lc.bwd_kernels;
    k.fwd_cp_bytes += n * lc.cp_bytes_fwd;
    k.bwd_cp_bytes += n * (lc.cp_bytes_bwd + lc.cp_bytes_re);
    k.fwd_cp_raw_s += n * lc.cp_raw_fwd;
    k.bwd_cp_raw_s += n * (lc.cp_raw_bwd + lc.cp_raw_re);
    k.fwd_ep_bytes += n * lc.ep_bytes_fwd;
    k.bwd_ep_bytes += n * (lc.ep_bytes_bwd + lc.ep_bytes_re);
    k.fwd_ep_raw_s += n * lc.ep_raw_fwd;
    k.bwd_ep_raw_s += n * (lc.ep_raw_bwd + lc.ep_raw_re);
  };
  // Layers of each kind in this chunk, and of those the ones recomputation re-runs (all of
  // them, except under full recomputation's block method).
  std::vector<double> count(size_t(parallelism::kLayerKindCount), 0.0);
  std::vector<double> rerun(count.size(), 0.0);
  const bool full = cfg.parallel.recompute == Recompute::kFull;
  for (int l = range.first_layer; l < range.first_layer + range.layers; ++l) {
    const size_t kind = size_t(LayerKindAt(m, l).index());
    count[kind] += 1;
    if (!full || cfg.parallel.RecomputesLayer(l - range.first_layer)) rerun[kind] += 1;
  }
  int moe_kinds = 0, dense_kinds = 0;
  for (const LayerKind& kind : parallelism::DistinctLayerKinds(m)) {
    if (count[size_t(kind.index())] > 0) ++(kind.moe && m.moe.enabled() ? moe_kinds : dense_kinds);
  }
  double n_moe = 0, n_dense = 0;
  double moe_fwd_kernels = 0, moe_fwd_s = 0;
  for (const LayerKind& kind : parallelism::DistinctLayerKinds(m)) {
    const double n = count[size_t(kind.index())];
    if (n == 0) continue;
    const LayerCost& lc = kind_cost[size_t(kind.index())];
    const bool moe_kind = kind.moe && m.moe.enabled();
    const double w = (moe_kind ? moe_kinds : dense_kinds) == 1 ? 1.0 : n;
    const double re = rerun[size_t(kind.index())];
    add(lc, re, moe_kind ? k.moe : k.dense, w * re / n);
    if (re < n) {  // layers outside the block method's checkpoints: nothing re-run
      LayerCost kept = lc;
      kept.recompute = kept.slow_recompute = kept.tp_re = kept.cp_re = kept.ep_re = 0;
      kept.cp_bytes_re = kept.cp_raw_re = kept.ep_bytes_re = kept.ep_raw_re = 0;
      kept.bwd_kernels -= lc.fwd_kernels;
      add(kept, n - re, moe_kind ? k.moe : k.dense, w * (n - re) / n);
    }
    (moe_kind ? n_moe : n_dense) += n;
    if (moe_kind) {
      moe_fwd_kernels += w * lc.fwd_kernels;
      moe_fwd_s += w * (lc.fwd + lc.tp_fwd + lc.cp_fwd + lc.ep_fwd);
    }
  }
  // The trace draws one dense and one MoE layer: for a class of one kind (most models) its
  // cost, else the mean of the chunk's layers of the class (a hybrid model's Mamba, attention
  // and MLP layers; windowed and full attention).
  auto mean = [](ChunkCost::Layer& one, double n, int kinds) {
    if (n <= 0 || kinds <= 1) return;
    for (double* f : {&one.fwd_compute_s, &one.bwd_compute_s, &one.fwd_tp_s, &one.bwd_tp_s,
                      &one.fwd_cp_s, &one.bwd_cp_s, &one.fwd_ep_s, &one.bwd_ep_s}) {
      *f /= n;
    }
  };
  mean(k.dense, n_dense, dense_kinds);
  mean(k.moe, n_moe, moe_kinds);
  if (moe_kinds > 1) {
    moe_fwd_kernels /= n_moe;
    moe_fwd_s /= n_moe;
  }
  *n_moe_out = n_moe;
  *moe_fwd_kernels_out = moe_fwd_kernels;
  *moe_fwd_s_out = moe_fwd_s;
}

// The chunk's layers in forward order for activation offloading: each one's time on the
// compute stream (compute and the exposed layer collectives) and the activations it saves.
std::vector<OffloadLayer> OffloadLayers(const StepConfig& cfg,
                                        const std::vector<LayerCost>& kind_cost,
                                        const ChunkLayers& range) {
  std::vector<OffloadLayer> layers;
  layers.reserve(size_t(std::max(0, range.layers)));
  std::vector<double> bytes(kind_cost.size(), -1.0);
  for (int l = range.first_layer; l < range.first_layer + range.layers; ++l) {
    const LayerKind kind = LayerKindAt(cfg.model, l);
    const size_t i = size_t(kind.index());
    if (bytes[i] < 0) bytes[i] = parallelism::LayerActivationBytes(cfg.model, cfg.parallel, kind);
    const LayerCost& lc = kind_cost[i];
    layers.push_back({lc.fwd + lc.tp_fwd + lc.cp_fwd + lc.ep_fwd,
                      lc.bwd + lc.recompute + lc.tp_bwd + lc.cp_bwd + lc.ep_bwd, bytes[i]});
  }
  return layers;
}

}  // namespace

Result<std::vector<ChunkCost>> ChunkCosts(const StepConfig& config, const GemmCalibration& gemm,
                                          const GroupTimers& timers) {
  // FP8 weights are cast once per step and reused by every micro-batch (TE caches the FP8
  // weight across gradient-accumulation steps): the layout's own micro-batch count, whatever
  // the scenario's layout was (the sweep and validate change it).
  StepConfig cfg = config;
  cfg.compute.fp8_weight_cast_reuse = int(std::max<int64_t>(1, cfg.parallel.num_micro_batches()));
  const ParallelConfig& c = cfg.parallel;
  const ModelSpec& m = cfg.model;
  const TensorSplit split = c.split();
  TpCollectiveTimer* tp = timers.tp;
  auto sum_tp = [&](const std::vector<TpCollective>& cs, bool forward) -> Result<double> {
    double total = 0;
    for (const TpCollective& col : cs) {
      if (col.forward != forward || tp == nullptr) continue;
      Result<double> t = tp->Seconds(ToCommOp(col.kind), col.bytes);
      if (!t.ok()) return t.status();
      total += *t;
    }
    return total;
  };

  // One cost per kind of layer the model has (transformer layers dense or MoE, windowed or not;
  // a hybrid model's Mamba, attention, MLP and MoE layers), indexed by LayerKind::index().
  std::vector<LayerCost> kind_cost(static_cast<size_t>(parallelism::kLayerKindCount));
  for (const LayerKind& kind : parallelism::DistinctLayerKinds(m)) {
    Result<LayerCost> r = CostOfLayer(cfg, gemm, timers, kind);
    if (!r.ok()) return r.status();
    kind_cost[size_t(kind.index())] = *r;
  }
  const auto emb = EmbeddingOps(m, split, c.micro_batch);
  const auto head = HeadOps(m, split, c.micro_batch);
  Result<double> emb_tp = sum_tp(EmbeddingTpCollectives(m, split, c.micro_batch), true);
  if (!emb_tp.ok()) return emb_tp.status();
  const auto head_tp_list = HeadTpCollectives(m, split, c.micro_batch);
  Result<double> head_tp_fwd = sum_tp(head_tp_list, true);
  if (!head_tp_fwd.ok()) return head_tp_fwd.status();
  Result<double> head_tp_bwd = sum_tp(head_tp_list, false);
  if (!head_tp_bwd.ok()) return head_tp_bwd.status();
  // Narayanan §4.1 scatter/gather: the receiver all-gathers the 1/t slices over NVLink.
  double pp_gather = 0;
  if (c.pp > 1 && c.pp_scatter_gather && c.tp > 1 && !c.sequence_parallel && tp != nullptr) {
    Result<double> g = tp->Seconds(comm::Op::kAllGather, double(c.micro_batch) * m.seq_len / c.cp *
                                                             m.hidden * m.bytes_per_element);
    if (!g.ok()) return g.status();
    pp_gather = *g;
  }

  const std::vector<ChunkLayers> ranges = ChunkLayerRanges(m, c);
  const int vstages = int(ranges.size());
  std::vector<ChunkCost> out(static_cast<size_t>(vstages));
  for (int j = 0; j < vstages; ++j) {
    ChunkCost& k = out[size_t(j)];
    // One MoE layer's forward (kernels, seconds), for the host below.
    double n_moe = 0, moe_fwd_kernels = 0, moe_fwd_s = 0;
    AddChunkLayers(cfg, kind_cost, ranges[size_t(j)], &k, &n_moe, &moe_fwd_kernels, &moe_fwd_s);
    if (j == 0) {
      k.fwd_compute_s += SumOps(cfg, gemm, emb, true);
      k.bwd_compute_s += SumOps(cfg, gemm, emb, false);
      k.fwd_tp_s += *emb_tp;
      k.fwd_kernels += SumKernels(emb, true);
      k.bwd_kernels += SumKernels(emb, false);
    } else {
      k.fwd_tp_s += pp_gather;
    }
    if (j == vstages - 1) {
      k.fwd_compute_s += SumOps(cfg, gemm, head, true);
      k.bwd_compute_s += SumOps(cfg, gemm, head, false);
      k.fwd_tp_s += *head_tp_fwd;
      k.bwd_tp_s += *head_tp_bwd;
      k.fwd_kernels += SumKernels(head, true);
      k.bwd_kernels += SumKernels(head, false);
    } else {
      k.bwd_tp_s += pp_gather;
    }
    // The host issues the pass's kernels while the GPU runs them; it falls behind only when
    // the launches take longer than the pass (step/host_overhead.h). A MoE layer's forward
    // cannot be run ahead of: its dispatcher waits on the host for the split sizes it copied
    // from the device (MoeDispatchKernels), so each MoE layer is a host segment of its own
    // that pays the sync and is launch-bound on its own kernels.
    double fwd_rest_kernels = k.fwd_kernels, fwd_rest_s = k.fwd_compute_s + k.fwd_comm_s();
    k.fwd_host_s = 0;
    if (n_moe > 0) {
      // (MoE layers of two kinds — windowed and full attention — are tested on their mean.)
      k.fwd_host_s = n_moe * (DeviceSyncSeconds(cfg.host) +
                              LaunchBoundSeconds(cfg.host, moe_fwd_kernels, moe_fwd_s));
      fwd_rest_kernels -= n_moe * moe_fwd_kernels;
      fwd_rest_s -= n_moe * moe_fwd_s;
    }
    k.fwd_host_s += LaunchBoundSeconds(cfg.host, fwd_rest_kernels, std::max(0.0, fwd_rest_s));
    k.bwd_host_s = LaunchBoundSeconds(cfg.host, k.bwd_kernels, k.bwd_compute_s + k.bwd_comm_s());
    if (c.cpu_offload_layers > 0) {
      const OffloadWait w =
          OffloadWaitSeconds(OffloadLayers(cfg, kind_cost, ranges[size_t(j)]), c.cpu_offload_layers,
                             cfg.host_d2h_Bps, cfg.host_h2d_Bps);
      k.fwd_offload_s = w.fwd_s;
      k.bwd_offload_s = w.bwd_s;
    }
  }
  return out;
}

std::vector<int> ExpertTpGroup(const ParallelConfig& c) {
  std::vector<int> g;
  for (int i = 0; i < c.etp; ++i) g.push_back(i);
  return g;
}

ParamSplit StageParams(const StepConfig& cfg, int stage) {
  return StageParameters(cfg.model, cfg.parallel, stage);
}

double PipelineSendBytes(const StepConfig& cfg, int nic_share) {
  const ParallelConfig& c = cfg.parallel;
  // Each CP rank sends the boundary activation of its own s/cp tokens.
  double bytes = double(c.micro_batch) * cfg.model.seq_len / c.cp * cfg.model.hidden *
                 cfg.model.bytes_per_element;
  if ((c.pp_scatter_gather || c.sequence_parallel) && c.tp > 1) bytes /= c.tp;
  return bytes * nic_share;
}

GradientBuckets PlanGradientBuckets(const StepConfig& cfg, int stage, int nic_share) {
  const ParallelConfig& c = cfg.parallel;
  const int v = ChunksPerRank(c);
  const double grad_bytes = cfg.memory.grad_bytes_per_param;
  const ParamSplit params = StageParams(cfg, stage);
  const int dense_ranks = c.dp * c.cp;
  const int expert_ranks = params.expert > 0 ? c.expert_dp() : 1;
  const double bucket_params =
      c.dp_bucket_bytes > 0 ? c.dp_bucket_bytes / grad_bytes : c.megatron_bucket_params();
  // Only gradients that have a group to be reduced over fill buckets (Megatron keeps dense and
  // expert parameters in separate bucket groups; an expert-DP group of one reduces nothing).
  const double chunk_params =
      ((dense_ranks > 1 ? params.dense : 0.0) + (expert_ranks > 1 ? params.expert : 0.0)) / v;
  GradientBuckets b;
  // Without overlap the reduction runs after the last backward (ZeRO-2/3: after each) over the
  // contiguous gradient buffer as one collective per chunk (Megatron-LM's DDP,
  // allreduce_gradients); NCCL pipelines it internally, so splitting it would only add launch
  // latencies. At most kMaxBucketsPerChunk buckets (larger ones beyond that): finer buckets add no
  // overlap once each is small next to a layer's backward, only events.
  constexpr double kMaxBucketsPerChunk = 4096;
  b.per_chunk =
      c.overlap_dp
          ? int(std::clamp(std::ceil(chunk_params / bucket_params), 1.0, kMaxBucketsPerChunk))
          : 1;
  b.bytes = dense_ranks > 1 ? params.dense / v * grad_bytes / b.per_chunk * nic_share : 0;
  b.expert_bytes = expert_ranks > 1 ? params.expert / v * grad_bytes / b.per_chunk * nic_share : 0;
  b.op = c.zero_stage >= 1 ? comm::Op::kReduceScatter : comm::Op::kAllReduce;
  // ZeRO-2/3 reduce-scatter every micro-batch's gradients (they cannot be kept whole);
  // otherwise gradients accumulate locally and are reduced once.
  const int64_t rounds = c.zero_stage >= 2 ? c.num_micro_batches() : 1;
  b.count = (dense_ranks == 1 && expert_ranks == 1) ? 0 : rounds * v * b.per_chunk;
  return b;
}

double CollectiveSmShare(const StepConfig& cfg, comm::Op op, comm::Algo algo,
                         comm::Protocol protocol, int ranks, int nodes, double bytes) {
  NcclCollectiveShape shape;
  shape.arch = cfg.gpu.arch;
  shape.op = op;
  shape.algo = algo;
  shape.protocol = protocol;
  shape.ranks = ranks;
  shape.nodes = nodes;
  shape.nics_per_node = cfg.topology.nics_per_node;
  shape.bytes = bytes;
  return SmShare(NcclCollectiveCtas(shape, {cfg.nccl_min_ctas, cfg.nccl_max_ctas}),
                 cfg.gpu.num_sms);
}

double ZeroWeightGatherBytes(const StepConfig& cfg, int stage, int nic_share) {
  return 2.0 * StageParams(cfg, stage).dense * nic_share;
}

double ZeroExpertWeightGatherBytes(const StepConfig& cfg, int stage, int nic_share) {
  return 2.0 * StageParams(cfg, stage).expert * nic_share;
}

Zero3Gather Zero3PassGather(const StepConfig& cfg, int stage, int nic_share) {
  const ParallelConfig& c = cfg.parallel;
  const ParamSplit p = StageParams(cfg, stage);
  const double v = ChunksPerRank(c);
  Zero3Gather g;
  g.dense = 2.0 * p.dense / v * nic_share;
  g.expert = c.expert_dp() > 1 ? 2.0 * p.expert / v * nic_share : 0.0;
  return g;
}

std::vector<int> DenseShardGroup(const Layout& layout, int gpu) {
  const ParallelConfig& c = layout.config();
  std::vector<int> dense = layout.DpCpGroup(gpu);
  const int shard = c.shard_group > 0 ? c.shard_group * c.cp : 0;
  if (shard > 0 && shard < int(dense.size())) dense.resize(size_t(shard));
  return dense;
}

std::vector<int> ShardReplicaGroup(const Layout& layout, int gpu) {
  const ParallelConfig& c = layout.config();
  const std::vector<int> dense = layout.DpCpGroup(gpu);
  const int shard = c.shard_group > 0 ? c.shard_group * c.cp : 0;
  std::vector<int> out;
  if (shard > 0 && shard < int(dense.size())) {
    for (size_t i = 0; i < dense.size(); i += size_t(shard)) out.push_back(dense[i]);
  }
  return out;
}

double TiedEmbeddingBytes(const StepConfig& cfg, int nic_share) {
  if (!cfg.model.tied_embeddings) return 0;
  return double(cfg.model.vocab) / cfg.parallel.tp * cfg.model.hidden *
         cfg.memory.grad_bytes_per_param * nic_share;
}

double OptimizerSeconds(const StepConfig& cfg, int stage) {
  const ParallelConfig& c = cfg.parallel;
  const ParamSplit p = StageParams(cfg, stage);
  const ShardDegrees shard = StateShardDegrees(c);
  const double params =
      c.zero_stage >= 1 ? p.dense / shard.dense + p.expert / shard.expert : p.total();
  return OptimizerTimeSeconds(cfg.gpu, cfg.compute, params,
                              cfg.memory.step_grad_bytes_per_param > 0);
}

}  // namespace trainsim::step
