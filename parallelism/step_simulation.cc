#include "parallelism/step_simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "comm/collective.h"
#include "comm/flow_network.h"
#include "parallelism/schedule.h"
#include "sim/engine.h"

namespace trainsim::parallelism {
namespace {

using sim::Time;

// Durations of one model chunk's passes for one micro-batch (unslowed compute, TP comm).
struct ChunkCost {
  double fwd_compute_s = 0, fwd_tp_s = 0;
  double bwd_compute_s = 0, bwd_tp_s = 0;  // includes recomputation
};

comm::Op ToCommOp(TpCollectiveKind k) {
  switch (k) {
    case TpCollectiveKind::kAllReduce:
      return comm::Op::kAllReduce;
    case TpCollectiveKind::kReduceScatter:
      return comm::Op::kReduceScatter;
    case TpCollectiveKind::kAllGather:
      return comm::Op::kAllGather;
  }
  return comm::Op::kAllReduce;
}

class TpTimer {
 public:
  TpTimer(const comm::Topology* topo, std::vector<int> group, const comm::Calibration* cal)
      : topo_(topo), group_(std::move(group)), cal_(cal) {
    std::set<int> nodes;
    for (int g : group_) nodes.insert(topo_->node_of(g));
    nodes_ = int(nodes.size());
  }
  Result<double> Seconds(comm::Op op, double bytes) {
    if (group_.size() <= 1 || bytes <= 0) return 0.0;
    const auto key = std::make_pair(int(op), uint64_t(bytes));
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    comm::CollectiveSpec spec;
    spec.op = op;
    spec.gpus = group_;
    spec.bytes = uint64_t(bytes);
    Result<comm::CollectiveTiming> est = comm::EstimateCollectiveCalibrated(*topo_, spec, cal_);
    if (!est.ok()) return est.status();
    const double s = est->time.seconds();
    cache_[key] = s;
    // A collective counts as calibrated only when every size it ran at was.
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
  // (name, calibrated) per distinct collective, in first-use order.
  const std::vector<std::pair<std::string, bool>>& use() const { return use_; }

 private:
  const comm::Topology* topo_;
  std::vector<int> group_;
  const comm::Calibration* cal_;
  int nodes_ = 1;
  std::map<std::pair<int, uint64_t>, double> cache_;
  std::vector<std::pair<std::string, bool>> use_;
};

Result<double> SumTp(TpTimer* timer, const std::vector<TpCollective>& cs, bool forward) {
  double total = 0;
  for (const TpCollective& c : cs) {
    if (c.forward != forward) continue;
    Result<double> s = timer->Seconds(ToCommOp(c.kind), c.bytes);
    if (!s.ok()) return s.status();
    total += *s;
  }
  return total;
}

// The GEMM calibration of a config (calibration null without one).
GemmCalibration GemmCalOf(const StepConfig& cfg) { return {cfg.calibration.get(), cfg.gemm_dtype}; }

double SumOps(const StepConfig& cfg, const std::vector<Op>& ops, bool forward,
              bool selective_only = false) {
  const GemmCalibration cal = GemmCalOf(cfg);
  double total = 0;
  for (const Op& op : ops) {
    if (selective_only && !op.selective_recompute) continue;
    total += OpTimeSeconds(cfg.gpu, cfg.compute, op, forward, &cal);
  }
  return total;
}

// Costs of each virtual stage (index = chunk·p + rank).
Result<std::vector<ChunkCost>> ChunkCosts(const StepConfig& cfg, TpTimer* tp) {
  const ParallelConfig& c = cfg.parallel;
  const ModelSpec& m = cfg.model;
  const TensorSplit split{c.tp, c.sequence_parallel};
  const int v = c.schedule == Schedule::kInterleaved1F1B ? c.virtual_stages : 1;
  const int vstages = c.pp * v;
  const double layers = double(m.num_layers) / vstages;

  const std::vector<Op> layer = LayerOps(m, split, c.micro_batch);
  const auto layer_tp = LayerTpCollectives(m, split, c.micro_batch);
  const double l_fwd = SumOps(cfg, layer, true), l_bwd = SumOps(cfg, layer, false);
  double l_recompute = 0;
  if (c.recompute == Recompute::kFull) l_recompute = l_fwd;
  if (c.recompute == Recompute::kSelective) l_recompute = SumOps(cfg, layer, true, true);
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
      k.fwd_compute_s += SumOps(cfg, emb, true);
      k.bwd_compute_s += SumOps(cfg, emb, false);
      k.fwd_tp_s += *emb_tp;
    } else {
      k.fwd_tp_s += pp_gather;
    }
    if (j == vstages - 1) {
      k.fwd_compute_s += SumOps(cfg, head, true);
      k.bwd_compute_s += SumOps(cfg, head, false);
      k.fwd_tp_s += *head_tp_fwd;
      k.bwd_tp_s += *head_tp_bwd;
    } else {
      k.bwd_tp_s += pp_gather;
    }
  }
  return out;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The simulation of one step: executors (one per simulated replica × stage), DP channels (one
// per stage, shared by the replicas), the gradient-norm barrier and the optimizer.
class StepSim {
 public:
  StepSim(const StepConfig& cfg, const comm::Topology* topo, const Layout* layout,
          std::vector<ChunkCost> costs, std::vector<int> replicas,
          const std::map<int, double>& slowdown, bool trace)
      : cfg_(cfg),
        c_(cfg.parallel),
        topo_(topo),
        layout_(layout),
        net_(&engine_, topo),
        costs_(std::move(costs)),
        replicas_(std::move(replicas)),
        record_trace_(trace) {
    v_ = c_.schedule == Schedule::kInterleaved1F1B ? c_.virtual_stages : 1;
    m_ = c_.num_micro_batches();
    orders_ = BuildSchedule(c_.schedule, c_.pp, v_, m_);
    const int share =
        std::max(1, topo->spec().gpus_per_node / std::max(1, topo->spec().nics_per_node));
    nic_share_ = std::min(c_.tp, share);
    for (size_t r = 0; r < replicas_.size(); ++r) {
      for (int s = 0; s < c_.pp; ++s) {
        Exec e;
        e.replica = int(r);
        e.stage = s;
        e.gpu = layout->GpuOf({0, s, replicas_[r]});
        e.slow = 1.0;
        for (int t = 0; t < c_.tp; ++t) {
          auto it = slowdown.find(layout->GpuOf({t, s, replicas_[r]}));
          if (it != slowdown.end()) e.slow = std::max(e.slow, it->second);
        }
        e.inbox.assign(size_t(2 * v_ * m_), Msg{});
        execs_.push_back(std::move(e));
      }
    }
    SetUpChannels();
    if (record_trace_) {
      const GemmCalibration cal = GemmCalOf(cfg);
      for (const Op& op : LayerOps(cfg.model, {c_.tp, c_.sequence_parallel}, c_.micro_batch)) {
        layer_ops_.push_back({op.name, OpTimeSeconds(cfg.gpu, cfg.compute, op, true, &cal),
                              OpTimeSeconds(cfg.gpu, cfg.compute, op, false, &cal),
                              op.selective_recompute});
      }
    }
  }

  comm::FlowNetwork* network() { return &net_; }

  Status Run() {
    for (size_t i = 0; i < execs_.size(); ++i) {
      engine_.Schedule(Time::Zero(), [this, i] { TryStart(int(i)); });
    }
    engine_.Run();
    if (!error_.ok()) return error_;
    for (const Exec& e : execs_) {
      if (!e.finished) {
        return Status::FailedPrecondition(
            "the step never completed: a link on the path of a pipeline transfer or gradient "
            "reduction is down (bandwidth factor 0)");
      }
    }
    return Status::Ok();
  }

  double step_end() const {
    double end = 0;
    for (const Exec& e : execs_) end = std::max(end, e.end_s);
    return end;
  }

  StepBreakdown Breakdown(int replica, int stage) const {
    const Exec& e = execs_[size_t(replica * c_.pp + stage)];
    StepBreakdown b = e.b;
    const double end = step_end();
    const double accounted = b.total_s();
    b.other_s += std::max(0.0, end - accounted);
    return b;
  }

  uint64_t events() const { return engine_.events_processed(); }
  uint64_t flows() const { return net_.flows_started(); }
  int closed_form_collectives() const { return closed_form_collectives_; }
  int closed_form_max_nodes() const { return closed_form_max_nodes_; }
  std::vector<TraceSlice>& trace() { return trace_; }

 private:
  struct KernelTime {
    std::string name;
    double fwd_s = 0, bwd_s = 0;
    bool selective = false;
  };
  struct Msg {
    bool arrived = false;
    double produced_s = 0;  // when the producer finished computing it (the send started)
  };
  struct Exec {
    int replica = 0, stage = 0, gpu = 0;
    double slow = 1;
    size_t next = 0;
    bool busy = false;               // computing, or blocked on its own send
    bool computing = false;          // inside a task (its kernels, TP collectives, ZeRO-3 gather)
    std::vector<size_t> pending_in;  // blocking sends to it waiting for its task to end
    double wait_since = -1;
    std::vector<Msg> inbox;  // [dir][chunk][mb]
    StepBreakdown b;
    double compute_done_s = -1, reduced_s = -1, opt_end_s = 0, end_s = 0;
    bool finished = false;
  };
  struct Send {  // a pipeline send: from executor src to dst's inbox[idx]
    int src = 0, dst = 0;
    size_t idx = 0;
    double bytes = 0;
    double produced_s = 0;  // when src's task ended
  };
  struct Bucket {
    double bytes = 0;
    comm::Op op = comm::Op::kAllReduce;
  };
  struct Channel {  // one DP communicator per stage (TP rank 0's), shared by replicas
    std::vector<int> group;
    std::vector<Bucket> buckets;   // in launch order
    std::vector<size_t> produced;  // per simulated replica: buckets it has made ready
    int buckets_per_chunk = 1;
    size_t next = 0;
    bool running = false;
    size_t done = 0;
    double done_s = 0;
    int optimizer_done = 0;
  };

  // A task longer than ~3 years of simulated time means absurd input (e.g. a slowdown of 1e12);
  // refuse it rather than overflow sim::Time.
  static constexpr double kMaxDurationS = 1e8;
  static Time Delay(double s) { return Time::FromSeconds(std::min(s, kMaxDurationS)); }
  static Status TooLong(double s) {
    return Status::OutOfRange("one pipeline task would take " + Fmt("%.3g", s) +
                              " s of simulated time; check the model size and slowdowns");
  }

  // Starts a DP-side collective: as flows on the network, or, when its group spans more than
  // flow_collective_max_nodes nodes, as one event after comm's closed form on the network's
  // current capacities (cached per group, op and size: capacities do not change during a step).
  // on_done never runs if a link on its path is down, as with flows.
  Result<comm::CollectiveEstimate> StartCollective(const comm::CollectiveSpec& spec,
                                                   std::function<void()> on_done) {
    // A group of at most that many GPUs cannot span more nodes; otherwise count its nodes once
    // per group (every bucket of a stage reduces over the same group).
    if (spec.gpus.size() <= size_t(std::max(cfg_.flow_collective_max_nodes, 0))) {
      return comm::RunCollective(&net_, spec, on_done);
    }
    auto [span_it, fresh] = span_of_.emplace(spec.gpus, 0);
    if (fresh) {
      std::set<int> nodes;
      for (int g : spec.gpus) nodes.insert(topo_->node_of(g));
      span_it->second = int(nodes.size());
    }
    const int span = span_it->second;
    if (span <= cfg_.flow_collective_max_nodes) return comm::RunCollective(&net_, spec, on_done);
    auto key = std::make_tuple(spec.gpus, int(spec.op), spec.bytes);
    auto it = closed_form_cache_.find(key);
    if (it == closed_form_cache_.end()) {
      Result<comm::CollectiveEstimate> est = comm::EstimateCollectiveOnNetwork(net_, spec);
      if (!est.ok()) return est.status();
      it = closed_form_cache_.emplace(std::move(key), *est).first;
    }
    closed_form_collectives_++;
    closed_form_max_nodes_ = std::max(closed_form_max_nodes_, span);
    if (!it->second.time.is_max()) engine_.Schedule(it->second.time, std::move(on_done));
    return it->second;
  }

  size_t MsgIndex(bool forward, int chunk, int mb) const {
    return (size_t(forward ? 0 : 1) * v_ + size_t(chunk)) * size_t(m_) + size_t(mb);
  }

  void SetUpChannels() {
    const double grad_bytes = cfg_.memory.grad_bytes_per_param;
    const double bucket_params = c_.dp_bucket_bytes > 0
                                     ? c_.dp_bucket_bytes / grad_bytes
                                     : std::max(40e6, 1e6 * c_.dp);  // Megatron-LM default
    channels_.resize(size_t(c_.pp));
    for (int s = 0; s < c_.pp; ++s) {
      Channel& ch = channels_[size_t(s)];
      ch.group = layout_->DpGroup(layout_->GpuOf({0, s, 0}));
      const double chunk_params = ParametersPerGpu(cfg_.model, c_, s) / v_;
      // Without overlap the reduction runs after the last backward over the contiguous gradient
      // buffer as one collective per chunk (Megatron-LM's DDP, allreduce_gradients); NCCL
      // pipelines it internally, so splitting it would only add launch latencies.
      // At most kMaxBucketsPerChunk buckets (larger ones beyond that): finer buckets add no
      // overlap once each is small next to a layer's backward, only events.
      constexpr double kMaxBucketsPerChunk = 4096;
      ch.buckets_per_chunk =
          c_.overlap_dp
              ? int(std::clamp(std::ceil(chunk_params / bucket_params), 1.0, kMaxBucketsPerChunk))
              : 1;
      const double bytes = chunk_params * grad_bytes / ch.buckets_per_chunk * nic_share_;
      const comm::Op op = c_.zero_stage >= 1 ? comm::Op::kReduceScatter : comm::Op::kAllReduce;
      // ZeRO-2/3 reduce-scatter every micro-batch's gradients (they cannot be kept whole);
      // otherwise gradients accumulate locally and are reduced once.
      const int64_t rounds = c_.zero_stage >= 2 ? m_ : 1;
      for (int64_t r = 0; r < rounds * v_ * ch.buckets_per_chunk; ++r) {
        ch.buckets.push_back({bytes, op});
      }
      ch.produced.assign(replicas_.size(), 0);
      if (c_.dp == 1) ch.buckets.clear();
    }
  }

  void Slice(int gpu, int track, std::string name, const char* cat, double start, double dur) {
    if (!record_trace_ || dur <= 0) return;
    trace_.push_back({gpu, track, std::move(name), cat, start, dur});
  }

  void TryStart(int ei) {
    Exec& e = execs_[size_t(ei)];
    if (e.busy || e.compute_done_s >= 0) return;
    const double now = engine_.now().seconds();
    const Task& t = orders_[size_t(e.stage)][e.next];
    const int j = t.chunk * c_.pp + e.stage;
    const int last = c_.pp * v_ - 1;
    const bool needs_input = t.forward ? j > 0 : j < last;
    if (needs_input) {
      const Msg& msg = e.inbox[MsgIndex(t.forward, t.chunk, t.micro_batch)];
      if (!msg.arrived) {
        if (e.wait_since < 0) e.wait_since = now;
        return;
      }
      if (e.wait_since >= 0) {
        const double bubble = std::max(0.0, std::min(now, msg.produced_s) - e.wait_since);
        const double wait = now - e.wait_since;
        e.b.bubble_s += bubble;
        e.b.pp_wait_s += wait - bubble;
        Slice(e.gpu, 0, bubble > 0.5 * wait ? "bubble" : "pp wait", "idle", e.wait_since, wait);
        e.wait_since = -1;
      }
    } else if (e.wait_since >= 0) {
      e.wait_since = -1;
    }
    e.busy = true;
    e.computing = true;
    if (c_.zero_stage >= 3 && c_.dp > 1) {
      // ZeRO-3 gathers this chunk's weights before each pass (no prefetch modelled).
      const double bytes = 2.0 * ParametersPerGpu(cfg_.model, c_, e.stage) / v_ * nic_share_;
      comm::CollectiveSpec spec{comm::Op::kAllGather, comm::Algo::kAuto, layout_->DpGroup(e.gpu),
                                uint64_t(bytes)};
      Result<comm::CollectiveEstimate> r = StartCollective(spec, [this, ei, now] {
        Exec& x = execs_[size_t(ei)];
        const double t_now = engine_.now().seconds();
        x.b.exposed_dp_comm_s += t_now - now;
        Slice(x.gpu, 1, "zero3 all_gather", "dp", now, t_now - now);
        RunTask(ei);
      });
      if (!r.ok()) error_ = r.status();
      return;
    }
    RunTask(ei);
  }

  void RunTask(int ei) {
    Exec& e = execs_[size_t(ei)];
    const Task t = orders_[size_t(e.stage)][e.next];
    const int j = t.chunk * c_.pp + e.stage;
    const ChunkCost& k = costs_[size_t(j)];
    const double compute = (t.forward ? k.fwd_compute_s : k.bwd_compute_s) * e.slow;
    const double tp = t.forward ? k.fwd_tp_s : k.bwd_tp_s;
    const double start = engine_.now().seconds();
    e.b.compute_s += compute;
    e.b.exposed_tp_comm_s += tp;
    if (record_trace_) {
      std::string name = std::string(t.forward ? "F" : "B") + std::to_string(t.micro_batch);
      if (v_ > 1) name.append(".").append(std::to_string(t.chunk));
      Slice(e.gpu, 0, name, t.forward ? "forward" : "backward", start, compute);
      Slice(e.gpu, 1, "tp collectives " + name, "tp", start + compute, tp);
      if (t.micro_batch == 0) KernelSlices(e, t, start);
    }
    const double dur = compute + tp;
    // Gradient buckets of this chunk become final during its last backward (overlap) or in
    // every backward (ZeRO-2/3).
    const bool last_b = !t.forward && t.micro_batch == m_ - 1;
    if (!t.forward && c_.dp > 1 && c_.overlap_dp && (last_b || c_.zero_stage >= 2)) {
      const int n = channels_[size_t(e.stage)].buckets_per_chunk;
      for (int i = 0; i < n; ++i) {
        const double at = dur * (i + 1) / n;
        engine_.Schedule(Delay(at), [this, s = e.stage, r = e.replica] { BucketReady(s, r); });
      }
    }
    if (!(dur < kMaxDurationS)) {
      error_ = TooLong(dur);
      return;
    }
    engine_.Schedule(Delay(dur), [this, ei, t, j] { TaskDone(ei, t, j); });
  }

  // The first micro-batch's passes broken into their kernels, layer by layer (nested inside
  // the task's slice; the embedding and head kernels are the rest of the task).
  void KernelSlices(const Exec& e, const Task& t, double start) {
    const int layers = cfg_.model.num_layers / (c_.pp * v_);
    double at = start;
    auto put = [&](const std::string& name, double dur) {
      Slice(e.gpu, 0, name, "kernel", at, dur * e.slow);
      at += dur * e.slow;
    };
    for (int l = 0; l < layers; ++l) {
      // Appends, not "literal" + std::string&&: GCC 12's false -Wrestrict (GCC bug 105329).
      std::string layer = "L";
      layer.append(std::to_string(t.chunk * c_.pp * layers + e.stage * layers +
                                  (t.forward ? l : layers - 1 - l)));
      if (t.forward) {
        for (const KernelTime& k : layer_ops_) put(layer + " " + k.name, k.fwd_s);
        continue;
      }
      for (const KernelTime& k : layer_ops_) {
        if (c_.recompute == Recompute::kFull ||
            (c_.recompute == Recompute::kSelective && k.selective)) {
          put(layer + " recompute " + k.name, k.fwd_s);
        }
      }
      for (auto it = layer_ops_.rbegin(); it != layer_ops_.rend(); ++it) {
        put(layer + " " + it->name + " bwd", it->bwd_s);
      }
    }
  }

  void TaskDone(int ei, Task t, int j) {
    Exec& e = execs_[size_t(ei)];
    const double now = engine_.now().seconds();
    e.busy = false;
    e.computing = false;
    // Blocking sends to this stage waited for it to reach its communication call.
    std::vector<size_t> waiting;
    waiting.swap(e.pending_in);
    for (size_t s : waiting) StartSend(s);
    const int last = c_.pp * v_ - 1;
    const bool sends = t.forward ? j < last : j > 0;
    if (sends && c_.pp > 1) {
      const int dst_j = t.forward ? j + 1 : j - 1;
      const int dst_stage = dst_j % c_.pp, dst_chunk = dst_j / c_.pp;
      const int dst_ei = e.replica * c_.pp + dst_stage;
      double bytes = double(c_.micro_batch) * cfg_.model.seq_len * cfg_.model.hidden *
                     cfg_.model.bytes_per_element;
      if ((c_.pp_scatter_gather || c_.sequence_parallel) && c_.tp > 1) bytes /= c_.tp;
      bytes *= nic_share_;
      const size_t idx = MsgIndex(t.forward, dst_chunk, t.micro_batch);
      execs_[size_t(dst_ei)].inbox[idx].produced_s = now;
      size_t s = sends_.size();
      if (free_sends_.empty()) {
        sends_.push_back({ei, dst_ei, idx, bytes, now});
      } else {
        s = free_sends_.back();
        free_sends_.pop_back();
        sends_[s] = {ei, dst_ei, idx, bytes, now};
      }
      if (c_.overlap_p2p) {
        StartSend(s);
      } else {
        // Megatron's _communicate: the send is matched by the receiver's recv, posted when
        // that stage's current task ends, and the sender waits for it to drain.
        e.busy = true;
        Exec& d = execs_[size_t(dst_ei)];
        if (d.computing) {
          d.pending_in.push_back(s);
        } else {
          StartSend(s);
        }
        return;
      }
    }
    Advance(ei, now);
  }

  // Starts pipeline send s (a slot of sends_, freed when it has drained).
  void StartSend(size_t s) {
    const Send& x = sends_[s];
    const double start = engine_.now().seconds();
    net_.StartFlow(topo_->Route(execs_[size_t(x.src)].gpu, execs_[size_t(x.dst)].gpu),
                   uint64_t(x.bytes), [this, s, start] {
                     const Send y = sends_[s];
                     free_sends_.push_back(s);
                     Exec& src = execs_[size_t(y.src)];
                     execs_[size_t(y.dst)].inbox[y.idx].arrived = true;
                     const double t_now = engine_.now().seconds();
                     Slice(src.gpu, 1, "pp send", "pp", start, t_now - start);
                     TryStart(y.dst);
                     if (!c_.overlap_p2p) {
                       src.busy = false;
                       src.b.pp_wait_s += t_now - y.produced_s;
                       Slice(src.gpu, 0, "blocked on pp send", "idle", y.produced_s,
                             t_now - y.produced_s);
                       Advance(y.src, t_now);
                     }
                   });
  }

  // The sender moves on to its next task (after its send, when sends block).
  void Advance(int ei, double now) {
    Exec& e = execs_[size_t(ei)];
    e.next++;
    if (e.next == orders_[size_t(e.stage)].size()) {
      e.compute_done_s = now;
      if (c_.dp > 1 && !c_.overlap_dp) {
        const int n = channels_[size_t(e.stage)].buckets_per_chunk;
        for (int64_t i = 0; i < int64_t(v_) * n * (c_.zero_stage >= 2 ? m_ : 1); ++i) {
          BucketReady(e.stage, e.replica);
        }
      }
      MaybeReduced(e.stage);
      return;
    }
    TryStart(ei);
  }

  // Buckets become ready in the same order in every replica; a bucket's reduction can start
  // once every replica has produced it.
  void BucketReady(int stage, int replica) {
    channels_[size_t(stage)].produced[size_t(replica)]++;
    Pump(stage);
  }

  void Pump(int stage) {
    Channel& ch = channels_[size_t(stage)];
    if (ch.running || ch.next >= ch.buckets.size()) return;
    Bucket& b = ch.buckets[ch.next];
    if (*std::min_element(ch.produced.begin(), ch.produced.end()) <= ch.next) return;
    ch.running = true;
    const double start = engine_.now().seconds();
    comm::CollectiveSpec spec{b.op, comm::Algo::kAuto, ch.group, uint64_t(b.bytes)};
    Result<comm::CollectiveEstimate> r = StartCollective(spec, [this, stage, start] {
      Channel& x = channels_[size_t(stage)];
      x.running = false;
      x.next++;
      x.done++;
      const double now = engine_.now().seconds();
      x.done_s = now;
      Slice(x.group[0], 1, "dp grad reduce", "dp", start, now - start);
      if (x.done == x.buckets.size()) MaybeReduced(stage);
      Pump(stage);
    });
    if (!r.ok()) error_ = r.status();
  }

  // A stage's replicas are reduced when all their backwards are done and every bucket of the
  // stage has been reduced. When every stage is, the gradient-norm barrier releases.
  void MaybeReduced(int stage) {
    Channel& ch = channels_[size_t(stage)];
    if (ch.done < ch.buckets.size()) return;
    const double now = engine_.now().seconds();
    for (size_t r = 0; r < replicas_.size(); ++r) {
      Exec& e = execs_[r * size_t(c_.pp) + size_t(stage)];
      if (e.compute_done_s < 0 || e.reduced_s >= 0) continue;
      e.reduced_s = now;
      e.b.exposed_dp_comm_s += now - e.compute_done_s;
      Slice(e.gpu, 0, "wait for dp reduction", "idle", e.compute_done_s, now - e.compute_done_s);
      reduced_count_++;
    }
    if (reduced_count_ == execs_.size()) ReduceTiedEmbedding();
  }

  // Megatron ties the output layer to the word embedding: with pp > 1 the first and last stages
  // each hold a copy, and after the DP reduction they all-reduce its gradient
  // (_allreduce_embedding_grads: vocab/tp × h per TP rank) before the optimizer. Its time is
  // exposed DP-side communication for those two stages.
  void ReduceTiedEmbedding() {
    if (c_.pp == 1) {
      Barrier();
      return;
    }
    const double start = engine_.now().seconds();
    const double bytes = double(cfg_.model.vocab) / c_.tp * cfg_.model.hidden *
                         cfg_.memory.grad_bytes_per_param * nic_share_;
    pending_embedding_ = replicas_.size();
    for (size_t r = 0; r < replicas_.size(); ++r) {
      const int first = int(r) * c_.pp, last = first + c_.pp - 1;
      comm::CollectiveSpec spec{comm::Op::kAllReduce,
                                comm::Algo::kAuto,
                                {execs_[size_t(first)].gpu, execs_[size_t(last)].gpu},
                                uint64_t(bytes)};
      Result<comm::CollectiveEstimate> res = StartCollective(spec, [this, first, last, start] {
        const double now = engine_.now().seconds();
        for (int ei : {first, last}) {
          Exec& e = execs_[size_t(ei)];
          // Until the all-reduce could start this stage waited on the others (as at the
          // barrier); then on the all-reduce itself.
          const double idle = start - e.reduced_s;
          if (c_.pp > 1) e.b.bubble_s += idle;
          e.b.exposed_dp_comm_s += now - start;
          Slice(e.gpu, 1, "tied embedding all_reduce", "dp", start, now - start);
          e.reduced_s = now;
        }
        if (--pending_embedding_ == 0) Barrier();
      });
      if (!res.ok()) error_ = res.status();
    }
  }

  void Barrier() {
    const double now = engine_.now().seconds();
    for (size_t i = 0; i < execs_.size(); ++i) {
      Exec& e = execs_[i];
      const double wait = now - e.reduced_s;
      // Waiting here for other stages is the pipeline drain when there are stages.
      if (c_.pp > 1) {
        e.b.bubble_s += wait;
      } else {
        e.b.other_s += wait;
      }
      Slice(e.gpu, 0, "grad-norm barrier", "idle", e.reduced_s, wait);
      const double params =
          ParametersPerGpu(cfg_.model, c_, e.stage) / (c_.zero_stage >= 1 ? double(c_.dp) : 1.0);
      const double opt = OptimizerTimeSeconds(cfg_.gpu, cfg_.compute, params,
                                              cfg_.memory.step_grad_bytes_per_param > 0) *
                         e.slow;
      e.b.optimizer_s += opt;
      Slice(e.gpu, 0, "optimizer", "optimizer", now, opt);
      if (!(opt < kMaxDurationS)) {
        error_ = TooLong(opt);
        return;
      }
      engine_.Schedule(Delay(opt), [this, i] { OptimizerDone(int(i)); });
    }
  }

  void OptimizerDone(int ei) {
    Exec& e = execs_[size_t(ei)];
    const double now = engine_.now().seconds();
    e.opt_end_s = now;
    if (c_.zero_stage == 0 || c_.zero_stage == 3 || c_.dp == 1) {
      Finish(ei, now);
      return;
    }
    Channel& ch = channels_[size_t(e.stage)];
    ch.optimizer_done++;
    if (ch.optimizer_done < int(replicas_.size())) return;
    // ZeRO-1/2: all-gather the updated bf16 weights across DP (Megatron's distributed optimizer).
    const double bytes = 2.0 * ParametersPerGpu(cfg_.model, c_, e.stage) * nic_share_;
    comm::CollectiveSpec spec{comm::Op::kAllGather, comm::Algo::kAuto, ch.group, uint64_t(bytes)};
    const int stage = e.stage;
    Result<comm::CollectiveEstimate> r = StartCollective(spec, [this, stage, now] {
      const double t = engine_.now().seconds();
      Slice(channels_[size_t(stage)].group[0], 1, "zero weight all_gather", "dp", now, t - now);
      for (size_t rr = 0; rr < replicas_.size(); ++rr) Finish(int(rr) * c_.pp + stage, t);
    });
    if (!r.ok()) error_ = r.status();
  }

  // Marks an executor finished at `end`; time after its optimizer (waiting for the ZeRO weight
  // all-gather) is exposed DP communication.
  void Finish(int ei, double end) {
    Exec& e = execs_[size_t(ei)];
    e.b.exposed_dp_comm_s += end - e.opt_end_s;
    e.end_s = end;
    e.finished = true;
  }

  const StepConfig& cfg_;
  const ParallelConfig& c_;
  const comm::Topology* topo_;
  const Layout* layout_;
  sim::Engine engine_;
  comm::FlowNetwork net_;
  std::vector<ChunkCost> costs_;
  std::vector<int> replicas_;
  bool record_trace_;
  int v_ = 1;
  int64_t m_ = 1;
  int nic_share_ = 1;
  std::vector<std::vector<Task>> orders_;
  std::vector<Exec> execs_;
  std::vector<Channel> channels_;
  std::vector<Send> sends_;
  std::vector<size_t> free_sends_;
  size_t reduced_count_ = 0;
  size_t pending_embedding_ = 0;
  std::map<std::tuple<std::vector<int>, int, uint64_t>, comm::CollectiveEstimate>
      closed_form_cache_;
  std::map<std::vector<int>, int> span_of_;  // nodes a collective group spans
  int closed_form_collectives_ = 0;
  int closed_form_max_nodes_ = 0;
  std::vector<KernelTime> layer_ops_;  // one layer's kernels, for the trace
  Status error_;
  std::vector<TraceSlice> trace_;
};

// The link of `kind` (NVLink, PCIe or NIC, either direction) that GPU `gpu` uses; -1 for a
// switch link, which no single GPU owns.
comm::LinkId GpuSideLink(const comm::Topology& topo, comm::LinkKind kind, int gpu) {
  switch (kind) {
    case comm::LinkKind::kNvlinkUp:
      return topo.nvlink_up(gpu);
    case comm::LinkKind::kNvlinkDown:
      return topo.nvlink_down(gpu);
    case comm::LinkKind::kPcieUp:
      return topo.pcie_up(gpu);
    case comm::LinkKind::kPcieDown:
      return topo.pcie_down(gpu);
    case comm::LinkKind::kNicTx:
      return topo.nic_tx(topo.global_nic_of(gpu));
    case comm::LinkKind::kNicRx:
      return topo.nic_rx(topo.global_nic_of(gpu));
    default:
      return -1;
  }
}

// The link factors the simulation applies (the worst per link): each degraded link, plus, for a
// GPU-side link (NVLink, PCIe, NIC) of a GPU that is not its TP group's rank 0, the same link of
// rank 0, whose flows stand for the group's (see the header). Adds the replicas such links
// touch to *replicas; a degraded switch link sets *all (every replica's traffic may cross it).
std::map<comm::LinkId, double> FoldLinkDegradations(const comm::Topology& topo,
                                                    const Layout& layout,
                                                    const std::vector<LinkDegradation>& links,
                                                    std::set<int>* replicas, bool* all) {
  std::map<comm::LinkId, double> factor;
  auto degrade = [&](comm::LinkId l, double f) {
    auto [it, fresh] = factor.emplace(l, f);
    if (!fresh) it->second = std::min(it->second, f);
  };
  const int nics = topo.spec().nics_per_node;
  for (const LinkDegradation& d : links) {
    degrade(d.link, d.bandwidth_factor);
    const comm::Link& link = topo.link(d.link);
    std::vector<int> gpus;  // the GPUs whose traffic uses the link
    switch (link.kind) {
      case comm::LinkKind::kNvlinkUp:
      case comm::LinkKind::kNvlinkDown:
      case comm::LinkKind::kPcieUp:
      case comm::LinkKind::kPcieDown:
        gpus.push_back(link.owner);
        break;
      case comm::LinkKind::kNicTx:
      case comm::LinkKind::kNicRx: {
        const int node = link.owner / nics, first = node * topo.gpus_per_node();
        for (int g = first; g < first + topo.gpus_per_node(); ++g) {
          if (topo.global_nic_of(g) == link.owner) gpus.push_back(g);
        }
        break;
      }
      default:
        *all = true;
        break;
    }
    for (int g : gpus) {
      if (g >= layout.num_gpus()) continue;  // a spare: no job traffic
      const RankCoord rc = layout.CoordOf(g);
      replicas->insert(rc.dp);
      degrade(GpuSideLink(topo, link.kind, layout.GpuOf({0, rc.pp, rc.dp})), d.bandwidth_factor);
    }
  }
  return factor;
}

}  // namespace

Result<StepResult> SimulateStep(const StepConfig& cfg, const ClusterState& state,
                                const SimulateOptions& options) {
  const ParallelConfig& c = cfg.parallel;
  Result<comm::Topology> topo = comm::Topology::Build(cfg.topology);
  if (!topo.ok()) return topo.status();
  TRAINSIM_RETURN_IF_ERROR(ValidateLayout(cfg.model, c, topo->num_gpus(), topo->gpus_per_node()));
  if (cfg.gpu.peak_flops <= 0 || cfg.gpu.hbm_bytes_per_s <= 0) {
    return Status::InvalidArgument("the GPU's peak FLOP/s and HBM bandwidth must be positive");
  }
  Layout layout(c, topo->gpus_per_node());
  if (cfg.report_gpu < 0 || cfg.report_gpu >= layout.num_gpus()) {
    return Status::InvalidArgument("report GPU " + std::to_string(cfg.report_gpu) +
                                   " is not in 0.." + std::to_string(layout.num_gpus() - 1));
  }
  std::map<int, double> slowdown;
  for (const auto& [gpu, factor] : state.gpu_slowdown) {
    if (gpu < 0 || gpu >= layout.num_gpus()) {
      return Status::InvalidArgument("slowed GPU " + std::to_string(gpu) + " is not in the job");
    }
    if (!(factor >= 1.0) || !(factor <= 1e6)) {
      return Status::InvalidArgument("GPU slowdown factor must be between 1 and 1e6 (got " +
                                     Fmt("%g", factor) + ")");
    }
    slowdown[gpu] = std::max(slowdown[gpu], factor);
  }
  for (const LinkDegradation& d : state.links) {
    if (d.link < 0 || d.link >= topo->num_links()) {
      return Status::InvalidArgument("degraded link " + std::to_string(d.link) + " does not exist");
    }
    if (!(d.bandwidth_factor >= 0) || !std::isfinite(d.bandwidth_factor)) {
      return Status::InvalidArgument("link bandwidth factor must be >= 0");
    }
  }

  StepResult res;
  res.memory =
      EstimateMemory(cfg.model, c, cfg.gpu.memory_bytes, topo->gpus_per_node(), cfg.memory);
  if (!res.memory.fits && !cfg.allow_oom) {
    std::string msg = "layout does not fit in GPU memory: " + res.memory.reason + ". Would fit:";
    for (const auto& s : res.memory.suggestions) msg += " [" + s + "]";
    msg += " (or pass --allow-oom to simulate it anyway)";
    return Status::FailedPrecondition(msg);
  }

  // Which replicas to simulate: every one with a slowed GPU or a degraded link, plus one
  // healthy representative.
  std::set<int> distinct;  // replicas that differ from the healthy ones
  for (const auto& [gpu, f] : slowdown) {
    if (f > 1.0) distinct.insert(layout.CoordOf(gpu).dp);
  }
  bool all_replicas = false;
  const std::map<comm::LinkId, double> link_factor =
      FoldLinkDegradations(*topo, layout, state.links, &distinct, &all_replicas);
  if (!link_factor.empty() && !all_replicas && c.pp > 1) {
    // A replica whose pipeline sends cross a degraded link differs too, even when no GPU of it
    // owns the link: with PXN a cross-rail send leaves through another GPU's NIC.
    std::vector<comm::LinkId> path;
    auto crosses = [&](int a, int b) {
      topo->RouteInto(a, b, &path);
      for (comm::LinkId l : path) {
        auto it = link_factor.find(l);
        if (it != link_factor.end() && it->second < 1.0) return true;
      }
      return false;
    };
    for (int d = 0; d < c.dp; ++d) {
      if (distinct.count(d)) continue;
      for (int s = 0; s + 1 < c.pp; ++s) {
        const int a = layout.GpuOf({0, s, d}), b = layout.GpuOf({0, s + 1, d});
        if (crosses(a, b) || crosses(b, a)) {
          distinct.insert(d);
          break;
        }
      }
    }
  }
  std::vector<int> replicas;
  if (all_replicas) {
    for (int d = 0; d < c.dp; ++d) replicas.push_back(d);
  } else {
    for (int d = 0; d < c.dp; ++d) {
      if (!distinct.count(d)) {
        replicas.push_back(d);
        break;
      }
    }
    for (int d : distinct) replicas.push_back(d);
    std::sort(replicas.begin(), replicas.end());
  }
  const int healthy_rep = [&] {
    for (int d : replicas) {
      if (!distinct.count(d)) return d;
    }
    return replicas.front();
  }();

  TpTimer tp(&*topo, layout.TpGroup(0), cfg.calibration.get());
  Result<std::vector<ChunkCost>> costs = ChunkCosts(cfg, &tp);
  if (!costs.ok()) return costs.status();
  {
    // The step's compute alone, at the slowest GPU's speed, must fit sim::Time comfortably.
    double max_slow = 1;
    for (const auto& [gpu, f] : slowdown) max_slow = std::max(max_slow, f);
    double total = 0;
    for (const ChunkCost& k : *costs) {
      total += k.fwd_compute_s + k.fwd_tp_s + k.bwd_compute_s + k.bwd_tp_s;
    }
    total *= double(c.num_micro_batches()) * max_slow;
    if (!(total < 1e9)) {
      return Status::OutOfRange("one step would take about " + Fmt("%.3g", total) +
                                " s of simulated time, beyond what trainsim simulates; check the "
                                "model size, batch and slowdowns");
    }
  }

  StepSim sim(cfg, &*topo, &layout, std::move(*costs), replicas, slowdown, options.record_trace);
  for (const auto& [link, factor] : link_factor) {
    sim.network()->SetLinkBandwidthFactor(link, factor);
  }
  TRAINSIM_RETURN_IF_ERROR(sim.Run());

  res.time_s = sim.step_end();
  const RankCoord rc = layout.CoordOf(cfg.report_gpu);
  int rep_index = 0;
  const int rep_dp = std::count(replicas.begin(), replicas.end(), rc.dp) ? rc.dp : healthy_rep;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (replicas[i] == rep_dp) rep_index = int(i);
  }
  res.report_gpu = cfg.report_gpu;
  res.report_gpu_place = layout.Describe(cfg.report_gpu);
  for (int s = 0; s < c.pp; ++s) res.stage_breakdown.push_back(sim.Breakdown(rep_index, s));
  res.breakdown = res.stage_breakdown[size_t(rc.pp)];

  const double n = layout.num_gpus();
  res.model_flops = ModelFlopsPerIteration(cfg.model, c.global_batch);
  res.hardware_flops = HardwareFlopsPerIteration(cfg.model, c.global_batch, c.recompute);
  res.tokens_per_s = double(c.global_batch) * cfg.model.seq_len / res.time_s;
  res.tflops_per_gpu = res.hardware_flops / (res.time_s * n) / 1e12;
  res.mfu = res.model_flops / (res.time_s * n * cfg.gpu.peak_flops);
  res.hfu = res.hardware_flops / (res.time_s * n * cfg.gpu.peak_flops);
  res.simulated_replicas = int(replicas.size());
  res.simulation_note = "simulated " + std::to_string(replicas.size()) + " of " +
                        std::to_string(c.dp) + " data-parallel replicas";
  if (int(replicas.size()) < c.dp) {
    const int others = c.dp - int(replicas.size());
    std::string others_text = " (the other one is";
    if (others > 1) {
      others_text = " (the other ";
      others_text.append(std::to_string(others)).append(" are");
    }
    res.simulation_note += others_text;
    res.simulation_note += " identical to replica " + std::to_string(healthy_rep) +
                           "; the data-parallel collectives span every replica)";
  }
  res.simulation_note += "; each stage's TP ranks run as one (the slowest)";
  res.closed_form_collectives = sim.closed_form_collectives();
  res.closed_form_max_nodes = sim.closed_form_max_nodes();
  if (res.closed_form_collectives > 0) {
    res.simulation_note += "; data-parallel collectives over up to " +
                           std::to_string(res.closed_form_max_nodes) +
                           " nodes timed in closed form (groups over " +
                           std::to_string(cfg.flow_collective_max_nodes) +
                           " nodes do not run as flows, so they do not contend with pipeline "
                           "sends)";
  }
  res.events = sim.events();
  res.flows = sim.flows();
  if (options.record_trace) res.trace = std::move(sim.trace());
  if (cfg.calibration) {
    CalibrationUse& u = res.calibration;
    u.used = true;
    u.file = cfg.calibration->path();
    u.gpu = cfg.calibration->gpu_name();
    u.sample = cfg.calibration->is_sample();
    const GemmCalibration cal = GemmCalOf(cfg);
    const GemmCoverage g = CountCalibratedGemms(
        cfg.gpu, &cal, LayerOps(cfg.model, {c.tp, c.sequence_parallel}, c.micro_batch));
    u.gemm_shapes = g.shapes;
    u.gemm_shapes_calibrated = g.calibrated;
    for (const auto& [name, calibrated] : tp.use()) {
      (calibrated ? u.collectives_calibrated : u.collectives_modelled).push_back(name);
    }
  }
  return res;
}

namespace {
std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}
}  // namespace

void WriteChromeTrace(const StepResult& result, std::ostream& out) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  std::set<int> gpus;
  for (const TraceSlice& s : result.trace) gpus.insert(s.gpu);
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int g : gpus) {
    sep();
    out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << g << ",\"args\":{\"name\":\"GPU "
        << g << "\"}}";
    sep();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << g
        << ",\"tid\":0,\"args\":{\"name\":\"compute\"}}";
    sep();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << g
        << ",\"tid\":1,\"args\":{\"name\":\"communication\"}}";
  }
  char buf[64];
  for (const TraceSlice& s : result.trace) {
    sep();
    out << "{\"name\":\"" << JsonEscape(s.name) << "\",\"cat\":\"" << s.category
        << "\",\"ph\":\"X\",\"pid\":" << s.gpu << ",\"tid\":" << s.track;
    std::snprintf(buf, sizeof buf, ",\"ts\":%.3f,\"dur\":%.3f}", s.start_s * 1e6,
                  s.duration_s * 1e6);
    out << buf;
  }
  out << "]}\n";
}

}  // namespace trainsim::parallelism
