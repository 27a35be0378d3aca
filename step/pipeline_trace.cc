// The trace-recording half of step::Pipeline (pipeline.h): a task's slice on its stage's
// compute track; for the first SimulateOptions::trace_microbatches micro-batches its layers in
// order, each layer's kernels nested in it and the layer's exposed TP/CP/EP collectives on their
// own tracks right after it; memory in use as a forward stores its activations and the matching
// backward frees them. Nothing here changes a task's timing: the slices subdivide the task's
// [start, start + duration) that Pipeline::RunTask schedules.
#include <algorithm>
#include <utility>

#include "comm/collective.h"
#include "parallelism/compute.h"
#include "parallelism/memory.h"
#include "parallelism/model.h"
#include "parallelism/roofline.h"
#include "step/flex_dispatch.h"
#include "step/pass_costs.h"
#include "step/pipeline.h"

namespace trainsim::step {
namespace {

using parallelism::CommGroup;
using parallelism::Task;
using parallelism::TpCollectiveKind;

int TrackOf(CommGroup g) {
  switch (g) {
    case CommGroup::kTp:
    case CommGroup::kEtp:
      return kTrackTp;
    case CommGroup::kCp:
      return kTrackCp;
    case CommGroup::kEp:
      return kTrackEp;
  }
  return kTrackTp;
}

// A kernel slice's roofline args (parallelism/roofline.h), as `run --ops` prints them.
sim::TraceArgs RooflineArgs(const parallelism::OpRoofline& r) {
  return {{"bytes", r.bytes},
          {"arithmetic_intensity", r.intensity},
          {"ridge_point", r.ridge},
          {"bound", std::string(r.compute_bound ? "compute" : "memory")},
          {"achieved_fraction", r.achieved_fraction}};
}

// 2^30: memory counters are in GiB, as nvidia-smi and PyTorch's memory summary report them.
constexpr double kGiB = 1073741824.0;

}  // namespace

void Pipeline::InitTrace() {
  const StepConfig& cfg = st_->cfg;
  const parallelism::ParallelConfig& c = st_->c;
  const parallelism::GemmCalibration cal = GemmCalibrationOf(cfg);
  const int gpu0 = st_->exec(0).gpu;
  for (bool moe : {false, true}) {
    if (moe && !cfg.model.moe.enabled()) break;
    std::vector<KernelTime>& ops_out = moe ? moe_ops_ : layer_ops_;
    for (const parallelism::KernelOp& op : LayerOps(cfg.model, c.split(), c.micro_batch, moe)) {
      ops_out.push_back({op.name, OpTimeSeconds(cfg.gpu, cfg.compute, op, true, &cal),
                         OpTimeSeconds(cfg.gpu, cfg.compute, op, false, &cal),
                         op.fwd_matmul_flops + op.fwd_other_flops,
                         op.bwd_matmul_flops + op.bwd_other_flops, op.recomputed_by,
                         RooflineArgs(RooflineOf(cfg.gpu, cfg.compute, op, true, &cal)),
                         RooflineArgs(RooflineOf(cfg.gpu, cfg.compute, op, false, &cal))});
    }
    std::vector<LayerCollective>& colls_out = moe ? moe_colls_ : layer_colls_;
    for (const parallelism::TpCollective& col :
         LayerTpCollectives(cfg.model, c.split(), c.micro_batch, moe)) {
      std::vector<int> group;
      switch (col.group) {
        case CommGroup::kTp:
          group = st_->layout->TpGroup(gpu0);
          break;
        case CommGroup::kCp:
          group = st_->layout->CpGroup(gpu0);
          break;
        case CommGroup::kEp:
          group = st_->layout->EpGroup(gpu0);
          break;
        case CommGroup::kEtp:
          group = ExpertTpGroup(c);
          break;
      }
      if (group.size() <= 1) continue;
      LayerCollective lc;
      lc.name = col.name;
      lc.op = ToCommOp(col.kind);
      lc.bytes = col.bytes;
      lc.count = std::max(1, col.count);
      lc.ranks = int(group.size());
      lc.track = TrackOf(col.group);
      lc.forward = col.forward;
      lc.recomputed = col.forward && (col.recomputed_by & c.recomputed_modules()) != 0;
      // A ring step of send/recvs lasts as long as its slowest pair (TimedGroups).
      for (const std::vector<int>& gpus : TimedGroups(lc.op, group)) {
        Result<comm::CollectiveEstimate> est = comm::EstimateCollective(
            *st_->topo, {lc.op, comm::Algo::kAuto, gpus, uint64_t(col.bytes)});
        if (est.ok() && est->time.seconds() * lc.count >= lc.estimate_s) {
          lc.algorithm = std::string(comm::AlgoName(est->algo));
          lc.protocol = std::string(comm::ProtocolName(est->protocol));
          lc.estimate_s = est->time.seconds() * lc.count;
        }
      }
      // A FLEX all-to-all as the step prices it: HybridEP's kernels and, across nodes, its
      // NVLink leg over the node's EP ranks (step/flex_dispatch.h).
      Result<double> priced =
          LayerCollectiveSeconds(col, lc.estimate_s, [&](double bytes) -> Result<double> {
            Result<comm::CollectiveEstimate> leg = comm::EstimateCollective(
                *st_->topo, {comm::Op::kAllToAll, comm::Algo::kAuto, NvlinkPeers(*st_->topo, group),
                             uint64_t(bytes)});
            if (!leg.ok()) return 0.0;  // an estimate for the trace's args only
            return leg->time.seconds();
          });
      if (priced.ok()) lc.estimate_s = *priced;
      colls_out.push_back(std::move(lc));
    }
  }
  ranges_ = parallelism::ChunkLayerRanges(cfg.model, c);
  for (const parallelism::ChunkLayers& r : ranges_) {
    chunk_act_bytes_.push_back(parallelism::ChunkActivationBytes(cfg.model, c, r));
  }
  for (size_t i = 0; i < st_->execs.size(); ++i) {
    const parallelism::MemoryBreakdown m =
        parallelism::StageModelStateBytes(cfg.model, c, st_->execs[i].stage, cfg.memory);
    memory_bytes_.push_back(m.weights + m.gradients + m.optimizer + m.gathered);
    MemorySample(int(i), 0);
  }
}

void Pipeline::MemorySample(int ei, double delta_bytes) {
  double& m = memory_bytes_[size_t(ei)];
  m += delta_bytes;
  st_->trace.Counter(st_->exec(ei).gpu, "memory in use (GiB)", TraceRecorder::Ns(st_->now()),
                     m / kGiB);
}

void Pipeline::TaskSlices(const Executor& e, const Task& t, double start, double dur) {
  const int j = t.chunk * st_->c.pp + e.stage;
  const ChunkCost& k = costs_[size_t(j)];
  const int64_t a = TraceRecorder::Ns(start);
  const int64_t b = a + StepState::Delay(dur).nanos();
  // Appends, not "literal" + std::string&&: GCC 12's false -Wrestrict (GCC bug 105329).
  std::string name(t.forward ? "F" : "B");
  name.append(std::to_string(t.micro_batch));
  if (st_->v > 1) name.append(".").append(std::to_string(t.chunk));
  const parallelism::ChunkLayers& range = ranges_[size_t(j)];
  st_->trace.SliceNs(e.gpu, kTrackCompute, name, t.forward ? "forward" : "backward", a, b - a,
                     {{"micro_batch", t.micro_batch},
                      {"chunk", int64_t(t.chunk)},
                      {"stage", int64_t(e.stage)},
                      {"first_layer", int64_t(range.first_layer)},
                      {"layers", int64_t(range.layers)},
                      // As the breakdown counts them: the compute at the full GPU's rate and
                      // the time the layer collectives beside it took from it (run's
                      // "compute" and "comm-slowed compute").
                      {"compute_s", ((t.forward ? k.fwd_compute_s : k.bwd_compute_s) -
                                     (t.forward ? k.fwd_slowed_s : k.bwd_slowed_s)) *
                                        e.slow},
                      {"slowed_s", (t.forward ? k.fwd_slowed_s : k.bwd_slowed_s) * e.slow},
                      {"tp_s", t.forward ? k.fwd_tp_s : k.bwd_tp_s},
                      {"cp_s", t.forward ? k.fwd_cp_s : k.bwd_cp_s},
                      {"ep_s", t.forward ? k.fwd_ep_s : k.bwd_ep_s}});
  if (st_->trace.Detailed(t.micro_batch)) LayerSlices(e, t, a, b);
}

// The pass layer by layer: each layer's compute (its kernels nested inside), then its exposed
// collectives on the TP/CP/EP tracks, each group's exposed time split over the layer's
// collectives in proportion to comm's estimate of each. The embedding, the output head and the
// pipeline gather are the rest of the pass, drawn before the layers (embedding forward, head
// backward, gather) or after them (head forward, embedding backward).
void Pipeline::LayerSlices(const Executor& e, const Task& t, int64_t a, int64_t b) {
  const int pp = st_->c.pp;
  const int j = t.chunk * pp + e.stage;
  const int last = pp * st_->v - 1;
  const ChunkCost& k = costs_[size_t(j)];
  const parallelism::ChunkLayers& range = ranges_[size_t(j)];
  const bool fwd = t.forward;
  const bool full_recompute = st_->c.recompute == parallelism::Recompute::kFull;
  double cs = 0;  // seconds from the task's start
  auto at = [&](double s) { return std::min(b, a + TraceRecorder::Ns(s)); };

  double layers_compute = 0, layers_comm = 0;
  for (int l = range.first_layer; l < range.first_layer + range.layers; ++l) {
    const ChunkCost::Layer& L = st_->cfg.model.IsMoeLayer(l) ? k.moe : k.dense;
    layers_compute += (fwd ? L.fwd_compute_s : L.bwd_compute_s) * e.slow;
    layers_comm +=
        fwd ? L.fwd_tp_s + L.fwd_cp_s + L.fwd_ep_s : L.bwd_tp_s + L.bwd_cp_s + L.bwd_ep_s;
  }
  const double rest_compute =
      std::max(0.0, (fwd ? k.fwd_compute_s : k.bwd_compute_s) * e.slow - layers_compute);
  const double rest_comm = std::max(0.0, (fwd ? k.fwd_comm_s() : k.bwd_comm_s()) - layers_comm);
  const char* rest_name = j == 0 && j == last ? "embedding + output head"
                          : j == 0            ? "embedding"
                          : j == last         ? "output head"
                                              : "pp gather";
  auto rest = [&] {
    const sim::TraceArgs args{{"micro_batch", t.micro_batch}};
    st_->trace.SliceNs(e.gpu, kTrackCompute, rest_name, "layer", at(cs),
                       at(cs + rest_compute) - at(cs), args);
    cs += rest_compute;
    st_->trace.SliceNs(e.gpu, kTrackTp, std::string(rest_name) + " tp", "tp", at(cs),
                       at(cs + rest_comm) - at(cs), args);
    cs += rest_comm;
  };
  const bool rest_first = fwd ? !(j == last && j != 0) : !(j == 0 && j != last);
  if (rest_first) rest();

  for (int i = 0; i < range.layers; ++i) {
    const int index = range.first_layer + (fwd ? i : range.layers - 1 - i);
    const bool moe = st_->cfg.model.IsMoeLayer(index);
    const ChunkCost::Layer& L = moe ? k.moe : k.dense;
    const double compute = (fwd ? L.fwd_compute_s : L.bwd_compute_s) * e.slow;
    std::string layer = "L";
    layer.append(std::to_string(index));
    double flops = 0;
    for (const KernelTime& op : moe ? moe_ops_ : layer_ops_) {
      flops += fwd ? op.fwd_flops : op.bwd_flops;
    }
    st_->trace.SliceNs(e.gpu, kTrackCompute, layer, "layer", at(cs), at(cs + compute) - at(cs),
                       {{"layer", int64_t(index)},
                        {"micro_batch", t.micro_batch},
                        {"moe", int64_t(moe ? 1 : 0)},
                        {"flops", flops}});
    KernelSlices(e, t, index, at(cs), at(cs + compute));
    cs += compute;
    // The layer's exposed collectives, group by group (TP, CP, EP).
    for (int track : {int(kTrackTp), int(kTrackCp), int(kTrackEp)}) {
      const double exposed = track == kTrackTp   ? (fwd ? L.fwd_tp_s : L.bwd_tp_s)
                             : track == kTrackCp ? (fwd ? L.fwd_cp_s : L.bwd_cp_s)
                                                 : (fwd ? L.fwd_ep_s : L.bwd_ep_s);
      if (exposed <= 0) continue;
      std::vector<const LayerCollective*> colls;
      double weight = 0;
      for (const LayerCollective& col : moe ? moe_colls_ : layer_colls_) {
        const bool runs = fwd ? col.forward : !col.forward || full_recompute || col.recomputed;
        if (col.track != track || !runs) continue;
        colls.push_back(&col);
        weight += col.estimate_s;
      }
      if (colls.empty()) {
        st_->trace.SliceNs(e.gpu, track, layer + " " + TraceTrackName(track), TraceTrackName(track),
                           at(cs), at(cs + exposed) - at(cs), {{"layer", int64_t(index)}});
        cs += exposed;
        continue;
      }
      for (const LayerCollective* col : colls) {
        const double share = weight > 0 ? col->estimate_s / weight : 1.0 / double(colls.size());
        const double d = exposed * share;
        const int64_t s0 = at(cs), s1 = at(cs + d);
        const double seconds = double(s1 - s0) * 1e-9;
        const double algbw = seconds > 0 ? col->bytes * col->count / seconds / 1e9 : 0.0;
        st_->trace.SliceNs(e.gpu, track,
                           layer + " " + std::string(comm::OpName(col->op)) + " " + col->name,
                           TraceTrackName(track), s0, s1 - s0,
                           {{"op", std::string(comm::OpName(col->op))},
                            {"bytes", int64_t(col->bytes)},
                            {"count", int64_t(col->count)},
                            {"ranks", int64_t(col->ranks)},
                            {"algorithm", col->algorithm},
                            {"protocol", col->protocol},
                            {"layer", int64_t(index)},
                            {"micro_batch", t.micro_batch},
                            {"algbw_GBps", algbw},
                            {"busbw_GBps", algbw * comm::BusBandwidthFactor(col->op, col->ranks)},
                            {"estimate_s", col->estimate_s}});
        cs += d;
      }
    }
  }
  if (!rest_first) rest();
}

// One layer's kernels inside its slice [a, b) (clamped to it): forward in order; backward the
// recomputed kernels first, then the backward kernels in reverse.
void Pipeline::KernelSlices(const Executor& e, const Task& t, int layer, int64_t a, int64_t b) {
  const parallelism::Recompute recompute = st_->c.recompute;
  const std::vector<KernelTime>& ops = st_->cfg.model.IsMoeLayer(layer) ? moe_ops_ : layer_ops_;
  double cs = 0;
  auto put = [&](std::string name, double dur, double flops, const sim::TraceArgs& roofline) {
    const int64_t s0 = std::min(b, a + TraceRecorder::Ns(cs * e.slow));
    const int64_t s1 = std::min(b, a + TraceRecorder::Ns((cs + dur) * e.slow));
    sim::TraceArgs args{
        {"layer", int64_t(layer)}, {"micro_batch", t.micro_batch}, {"flops", flops}};
    args.insert(args.end(), roofline.begin(), roofline.end());
    st_->trace.SliceNs(e.gpu, kTrackCompute, std::move(name), "kernel", s0, s1 - s0,
                       std::move(args));
    cs += dur;
  };
  if (t.forward) {
    for (const KernelTime& k : ops) put(k.name, k.fwd_s, k.fwd_flops, k.fwd_args);
    return;
  }
  // Full recomputation re-runs this layer unless the block method leaves it out.
  bool full = false;
  if (recompute == parallelism::Recompute::kFull) {
    for (const parallelism::ChunkLayers& r : ranges_) {
      if (layer >= r.first_layer && layer < r.first_layer + r.layers) {
        full = st_->c.RecomputesLayer(layer - r.first_layer);
      }
    }
  }
  for (const KernelTime& k : ops) {
    if (full || (k.recomputed_by & st_->c.recomputed_modules()) != 0) {
      put("recompute " + k.name, k.fwd_s, k.fwd_flops, k.fwd_args);
    }
  }
  for (auto it = ops.rbegin(); it != ops.rend(); ++it)
    put(it->name + " bwd", it->bwd_s, it->bwd_flops, it->bwd_args);
}

}  // namespace trainsim::step
