#include "step/pipeline.h"

#include <cstdio>
#include <utility>

#include "parallelism/compute.h"
#include "parallelism/model.h"
#include "parallelism/roofline.h"
#include "step/input_pipeline.h"

namespace trainsim::step {

using parallelism::Task;

namespace {

// A kernel slice's args: its roofline (parallelism/roofline.h).
std::string RooflineArgs(const parallelism::OpRoofline& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"flops\":%.6g,\"bytes\":%.6g,\"intensity\":%.4g,\"ridge\":%.4g,"
                "\"bound\":\"%s\",\"achieved_fraction\":%.4f}",
                r.flops, r.bytes, r.intensity, r.ridge, r.compute_bound ? "compute" : "memory",
                r.achieved_fraction);
  return buf;
}

}  // namespace

Pipeline::Pipeline(StepState* state, std::vector<ChunkCost> costs, GradientSync* sync)
    : st_(state),
      costs_(std::move(costs)),
      sync_(sync),
      send_bytes_(PipelineSendBytes(state->cfg, state->nic_share)),
      orders_(BuildSchedule(state->c.schedule, state->c.pp, state->v, state->m)) {
  if (st_->trace.enabled()) {
    const StepConfig& cfg = st_->cfg;
    const parallelism::GemmCalibration cal = GemmCalibrationOf(cfg);
    for (bool moe : {false, true}) {
      if (moe && !cfg.model.moe.enabled()) break;
      std::vector<KernelTime>& out = moe ? moe_ops_ : layer_ops_;
      for (const parallelism::KernelOp& op :
           LayerOps(cfg.model, st_->c.split(), st_->c.micro_batch, moe)) {
        out.push_back({op.name, OpTimeSeconds(cfg.gpu, cfg.compute, op, true, &cal),
                       OpTimeSeconds(cfg.gpu, cfg.compute, op, false, &cal), op.selective_recompute,
                       RooflineArgs(RooflineOf(cfg.gpu, cfg.compute, op, true, &cal)),
                       RooflineArgs(RooflineOf(cfg.gpu, cfg.compute, op, false, &cal))});
      }
    }
    ranges_ = parallelism::ChunkLayerRanges(cfg.model, st_->c);
  }
}

Status Pipeline::Run() {
  for (size_t i = 0; i < st_->execs.size(); ++i) {
    st_->engine.Schedule(sim::Time::Zero(), [this, i] { TryStart(int(i)); });
  }
  st_->engine.Run();
  if (!st_->error.ok()) return st_->error;
  for (const Executor& e : st_->execs) {
    if (!e.finished) {
      return Status::FailedPrecondition(
          "the step never completed: a link on the path of a pipeline transfer or gradient "
          "reduction is down (bandwidth factor 0)");
    }
  }
  return Status::Ok();
}

size_t Pipeline::MsgIndex(bool forward, int chunk, int64_t mb) const {
  return (size_t(forward ? 0 : 1) * size_t(st_->v) + size_t(chunk)) * size_t(st_->m) + size_t(mb);
}

void Pipeline::TryStart(int ei) {
  Executor& e = st_->exec(ei);
  if (e.busy || e.compute_done_s >= 0) return;
  const double now = st_->now();
  const Task& t = orders_[size_t(e.stage)][e.next];
  const int pp = st_->c.pp;
  const int j = t.chunk * pp + e.stage;
  const int last = pp * st_->v - 1;
  const bool needs_input = t.forward ? j > 0 : j < last;
  if (Held(ei, t, j)) return;
  if (needs_input) {
    const Executor::Msg& msg = e.inbox[MsgIndex(t.forward, t.chunk, t.micro_batch)];
    if (!msg.arrived) {
      if (e.wait_since < 0) e.wait_since = now;
      return;
    }
    if (e.wait_since >= 0) {
      // Waiting for input not yet produced is bubble; for input in flight, PP wait.
      const double bubble = std::max(0.0, std::min(now, msg.produced_s) - e.wait_since);
      const double wait = now - e.wait_since;
      e.b.bubble_s += bubble;
      e.b.pp_wait_s += wait - bubble;
      st_->trace.Slice(e.gpu, 0, bubble > 0.5 * wait ? "bubble" : "pp wait", "idle", e.wait_since,
                       wait);
      e.wait_since = -1;
    }
  } else if (e.wait_since >= 0) {
    e.wait_since = -1;
  }
  e.busy = true;
  e.computing = true;
  if (sync_->GathersBeforePass()) {
    const ChunkCost& k = costs_[size_t(j)];
    const double pass =
        t.forward ? k.fwd_compute_s + k.fwd_comm_s() : k.bwd_compute_s + k.bwd_comm_s();
    sync_->BeforePass(ei, pass * e.slow, [this, ei](double extra) { RunTask(ei, extra); });
  } else {
    RunTask(ei, 0);
  }
}

// The host's per-step framework time before a stage's first task, and the data loader's
// micro-batch before the first stage's forward: until both are ready the executor waits
// (host overhead, then input stall) and TryStart runs again when they are.
bool Pipeline::Held(int ei, const Task& t, int j) {
  Executor& e = st_->exec(ei);
  if (e.released) {  // the wait scheduled below has ended
    e.released = false;
    e.held = false;
    return false;
  }
  if (e.held) return true;
  const double now = st_->now();
  const double host_ready = e.next == 0 ? st_->cfg.host.step_s : 0.0;
  double input_ready = 0;
  if (t.forward && j == 0) {
    input_ready = st_->cfg.host.step_s + MicroBatchReadyS(st_->loader_s_per_micro_batch,
                                                          st_->loader_queued, t.micro_batch);
  }
  const double ready = std::max(host_ready, input_ready);
  if (!(now < ready)) return false;
  // The wait in the engine's own ticks, so the breakdown adds up to the step exactly.
  const sim::Time delay = StepState::Delay(ready - now);
  const double wait = delay.seconds();
  const double host = std::min(wait, std::max(0.0, host_ready - now));
  e.b.host_overhead_s += host;
  e.b.input_stall_s += wait - host;
  st_->trace.Slice(e.gpu, 0, "host framework", "host", now, host);
  st_->trace.Slice(e.gpu, 0, "input stall", "input", now + host, wait - host);
  e.held = true;
  st_->engine.Schedule(delay, [this, ei] {
    st_->exec(ei).released = true;
    TryStart(ei);
  });
  return true;
}

// `gather_s`: FSDP gathers that outlast the pass (already counted as exposed DP comm).
void Pipeline::RunTask(int ei, double gather_s) {
  Executor& e = st_->exec(ei);
  const Task t = orders_[size_t(e.stage)][e.next];
  const int j = t.chunk * st_->c.pp + e.stage;
  const ChunkCost& k = costs_[size_t(j)];
  const double compute = (t.forward ? k.fwd_compute_s : k.bwd_compute_s) * e.slow;
  const double tp = t.forward ? k.fwd_tp_s : k.bwd_tp_s;
  const double cp = t.forward ? k.fwd_cp_s : k.bwd_cp_s;
  const double ep = t.forward ? k.fwd_ep_s : k.bwd_ep_s;
  const double host = t.forward ? k.fwd_host_s : k.bwd_host_s;
  const double start = st_->now();
  e.b.host_overhead_s += host;
  e.b.compute_s += compute;
  e.b.exposed_tp_comm_s += tp;
  e.b.exposed_cp_comm_s += cp;
  e.b.exposed_ep_comm_s += ep;
  if (st_->trace.enabled()) {
    // Appends, not "literal" + std::string&&: GCC 12's false -Wrestrict (GCC bug 105329).
    std::string name(t.forward ? "F" : "B");
    name.append(std::to_string(t.micro_batch));
    if (st_->v > 1) name.append(".").append(std::to_string(t.chunk));
    st_->trace.Slice(e.gpu, 0, name, t.forward ? "forward" : "backward", start, compute);
    st_->trace.Slice(e.gpu, 1, "tp collectives " + name, "tp", start + compute, tp);
    if (cp > 0) st_->trace.Slice(e.gpu, 1, "cp exchange " + name, "cp", start + compute + tp, cp);
    if (ep > 0) {
      st_->trace.Slice(e.gpu, 1, "ep all_to_all " + name, "ep", start + compute + tp + cp, ep);
    }
    if (t.micro_batch == 0) KernelSlices(e, t, start);
    st_->trace.Slice(e.gpu, 0, "launch-bound " + name, "host", start + compute + tp + cp + ep,
                     host);
  }
  const double dur = compute + tp + cp + ep + host + gather_s;
  // Gradient buckets of this chunk become final during its last backward (overlap) or in
  // every backward (ZeRO-2/3).
  const bool last_b = !t.forward && t.micro_batch == st_->m - 1;
  if (!t.forward && sync_->reduces() && st_->c.overlap_dp && (last_b || st_->c.zero_stage >= 2)) {
    const int n = sync_->buckets_per_chunk(e.stage);
    for (int i = 0; i < n; ++i) {
      const double at = dur * (i + 1) / n;
      st_->engine.Schedule(StepState::Delay(at),
                           [this, s = e.stage, r = e.replica] { sync_->BucketReady(s, r); });
    }
  }
  if (!(dur < StepState::kMaxDurationS)) {
    st_->error = StepState::TooLong(dur);
    return;
  }
  st_->engine.Schedule(StepState::Delay(dur), [this, ei, t, j] { TaskDone(ei, t, j); });
}

// The first micro-batch's passes broken into their kernels, layer by layer (nested inside the
// task's slice; the embedding and head kernels are the rest of the task).
void Pipeline::KernelSlices(const Executor& e, const Task& t, double start) {
  const int j = t.chunk * st_->c.pp + e.stage;
  const parallelism::ChunkLayers& range = ranges_[size_t(j)];
  const parallelism::Recompute recompute = st_->c.recompute;
  double at = start;
  auto put = [&](const std::string& name, double dur, const std::string& args) {
    st_->trace.Slice(e.gpu, 0, name, "kernel", at, dur * e.slow, args);
    at += dur * e.slow;
  };
  for (int l = 0; l < range.layers; ++l) {
    const int index = range.first_layer + (t.forward ? l : range.layers - 1 - l);
    const std::vector<KernelTime>& ops = st_->cfg.model.IsMoeLayer(index) ? moe_ops_ : layer_ops_;
    // Appends, not "literal" + std::string&&: GCC 12's false -Wrestrict (GCC bug 105329).
    std::string layer = "L";
    layer.append(std::to_string(index));
    if (t.forward) {
      for (const KernelTime& k : ops) put(layer + " " + k.name, k.fwd_s, k.fwd_args);
      continue;
    }
    for (const KernelTime& k : ops) {
      if (recompute == parallelism::Recompute::kFull ||
          (recompute == parallelism::Recompute::kSelective && k.selective)) {
        put(layer + " recompute " + k.name, k.fwd_s, k.fwd_args);
      }
    }
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      put(layer + " " + it->name + " bwd", it->bwd_s, it->bwd_args);
    }
  }
}

void Pipeline::TaskDone(int ei, Task t, int j) {
  Executor& e = st_->exec(ei);
  const double now = st_->now();
  e.busy = false;
  e.computing = false;
  // Blocking sends to this stage waited for it to reach its communication call.
  std::vector<size_t> waiting;
  waiting.swap(e.pending_in);
  for (size_t s : waiting) StartSend(s);
  const int pp = st_->c.pp;
  const int last = pp * st_->v - 1;
  const bool sends = t.forward ? j < last : j > 0;
  if (sends && pp > 1) {
    const int dst_j = t.forward ? j + 1 : j - 1;
    const int dst_stage = dst_j % pp, dst_chunk = dst_j / pp;
    const int dst_ei = e.replica * pp + dst_stage;
    const size_t idx = MsgIndex(t.forward, dst_chunk, t.micro_batch);
    st_->exec(dst_ei).inbox[idx].produced_s = now;
    size_t s = sends_.size();
    if (free_sends_.empty()) {
      sends_.push_back({ei, dst_ei, idx, send_bytes_, now});
    } else {
      s = free_sends_.back();
      free_sends_.pop_back();
      sends_[s] = {ei, dst_ei, idx, send_bytes_, now};
    }
    if (st_->c.p2p_overlapped()) {
      StartSend(s);
    } else {
      // Megatron's _communicate: the send is matched by the receiver's recv, posted when that
      // stage's current task ends, and the sender waits for it to drain.
      e.busy = true;
      Executor& d = st_->exec(dst_ei);
      if (d.computing) {
        d.pending_in.push_back(s);
      } else {
        StartSend(s);
      }
      return;
    }
  }
  Advance(ei);
}

// Starts pipeline send s (a slot of sends_, freed when it has drained).
void Pipeline::StartSend(size_t s) {
  const Send& x = sends_[s];
  const double start = st_->now();
  st_->net.StartFlow(st_->topo->Route(st_->exec(x.src).gpu, st_->exec(x.dst).gpu),
                     uint64_t(x.bytes), [this, s, start] {
                       const Send y = sends_[s];
                       free_sends_.push_back(s);
                       Executor& src = st_->exec(y.src);
                       st_->exec(y.dst).inbox[y.idx].arrived = true;
                       const double t_now = st_->now();
                       st_->trace.Slice(src.gpu, 1, "pp send", "pp", start, t_now - start);
                       TryStart(y.dst);
                       if (!st_->c.p2p_overlapped()) {
                         src.busy = false;
                         src.b.pp_wait_s += t_now - y.produced_s;
                         st_->trace.Slice(src.gpu, 0, "blocked on pp send", "idle", y.produced_s,
                                          t_now - y.produced_s);
                         Advance(y.src);
                       }
                     });
}

// The executor moves on to its next task (after its send, when sends block).
void Pipeline::Advance(int ei) {
  Executor& e = st_->exec(ei);
  e.next++;
  if (e.next == orders_[size_t(e.stage)].size()) {
    sync_->ComputeDone(ei);
    return;
  }
  TryStart(ei);
}

}  // namespace trainsim::step
