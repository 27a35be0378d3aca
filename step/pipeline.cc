#include "step/pipeline.h"

#include <cstdio>
#include <utility>

#include "parallelism/compute.h"
#include "parallelism/model.h"
#include "parallelism/roofline.h"
#include "step/input_pipeline.h"

namespace trainsim::step {

using parallelism::Task;

Pipeline::Pipeline(StepState* state, std::vector<ChunkCost> costs, GradientSync* sync)
    : st_(state),
      costs_(std::move(costs)),
      sync_(sync),
      send_bytes_(PipelineSendBytes(state->cfg, state->nic_share)),
      orders_(BuildSchedule(state->c.schedule, state->c.pp, state->v, state->m)) {
  if (st_->trace.enabled()) InitTrace();
  if (st_->c.cp > 1) InitTraffic(kCpTraffic);
  if (st_->c.ep > 1) InitTraffic(kEpTraffic);
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
          "the step never completed: a link on the path of a pipeline transfer, gradient "
          "reduction or CP/EP exchange is down (bandwidth factor 0)");
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
      st_->trace.Slice(e.gpu, kTrackCompute, bubble > 0.5 * wait ? "bubble" : "pp wait", "idle",
                       e.wait_since, wait, {{"bubble_s", bubble}, {"pp_wait_s", wait - bubble}});
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
  const double offload = t.forward ? k.fwd_offload_s : k.bwd_offload_s;
  // The layer collectives' slowdown of this pass's compute (ChunkCost::fwd_slowed_s).
  const double slowed = (t.forward ? k.fwd_slowed_s : k.bwd_slowed_s) * e.slow;
  const double start = st_->now();
  e.b.host_overhead_s += host;
  e.b.compute_s += compute - slowed;
  e.b.compute_slowed_s += slowed;
  e.b.exposed_tp_comm_s += tp;
  e.b.exposed_cp_comm_s += cp;
  e.b.exposed_ep_comm_s += ep;
  e.b.offload_wait_s += offload;
  const double dur = compute + tp + cp + ep + host + offload + gather_s;
  // The pass's work before its exposed CP and EP phases on the network (all of it when
  // neither is on flows).
  const double before_net = dur - StartHiddenTraffic(ei, t, j);
  if (st_->trace.enabled()) {
    TaskSlices(e, t, start, dur);
    // The waits nested at the end of the task, after its layers: the host's launches
    // (host_overhead.h), then activation offloading's copies (activation_offload.h).
    const double layers_s = compute + tp + cp + ep;
    auto wait_slice = [&](std::string name, const char* category, const char* key, double from,
                          double len) {
      const int64_t a = TraceRecorder::Ns(start);
      const int64_t w0 = a + TraceRecorder::Ns(from);
      const int64_t w1 = a + TraceRecorder::Ns(from + len);
      name.append(std::to_string(t.micro_batch));
      st_->trace.SliceNs(e.gpu, kTrackCompute, std::move(name), category, w0, w1 - w0,
                         {{"micro_batch", t.micro_batch}, {key, len}});
    };
    if (host > 0) {
      wait_slice(t.forward ? "launch-bound F" : "launch-bound B", "host", "host_wait_s", layers_s,
                 host);
    }
    if (offload > 0) {
      wait_slice(t.forward ? "offload wait F" : "reload wait B", "offload", "offload_wait_s",
                 layers_s + host, offload);
    }
    if (t.forward) MemorySample(ei, chunk_act_bytes_[size_t(j)]);
  }
  // Gradient buckets of this chunk become final during its last backward (overlap) or in
  // every backward (ZeRO-2/3).
  // The last one is ready when the task ends (SettleTask), after any slowdown.
  if (MakesBuckets(t)) {
    sync_->BucketsDuring(e.stage, e.replica, dur, sync_->buckets_per_chunk(e.stage) - 1);
  }
  if (!(dur < StepState::kMaxDurationS)) {
    st_->error = StepState::TooLong(dur);
    return;
  }
  // Collectives in flight beside the task (the DP reduction, FSDP's prefetched gathers) slow
  // the share of it that computes (docs/step-simulation.md).
  st_->SetComputeRate(e, before_net > 0 ? compute / before_net : 0.0);
  if (before_net < dur) {
    st_->engine.Schedule(StepState::Delay(before_net), [this, ei, t, j] { NetPhase(ei, t, j, 0); });
    return;
  }
  st_->engine.Schedule(StepState::Delay(dur), [this, ei, t, j] { SettleTask(ei, t, j, 0); });
}

// At the task's end, and at the end of each extension of `extended` seconds: the compute owes
// the work the collectives beside it took (Executor::lost_s) less what the extension, computing
// at full rate but for the collectives still in flight, made up. It is extended by what it
// owes at the SMs left to it now, until nothing is owed; then the task is done.
void Pipeline::SettleTask(int ei, Task t, int j, double extended) {
  Executor& e = st_->exec(ei);
  st_->Accrue(e);
  const double owed = e.owed_s + e.lost_s - extended;
  e.lost_s = 0;
  e.owed_s = 0;
  // Below the engine's 1 ns tick an extension would not advance the clock.
  if (owed > 1e-9) {
    const double share = std::min(e.comm_share, st_->max_comm_share());
    const sim::Time d = StepState::Delay(owed / (1 - share));
    if (d > sim::Time::Zero()) {
      st_->SetComputeRate(e, 1.0);
      e.owed_s = owed;
      e.b.compute_slowed_s += d.seconds();
      st_->trace.Slice(e.gpu, kTrackCompute, "slowed by overlapped comm", "compute", st_->now(),
                       d.seconds(), {{"micro_batch", t.micro_batch}, {"sm_share", share}});
      st_->engine.Schedule(d, [this, ei, t, j, len = d.seconds()] { SettleTask(ei, t, j, len); });
      return;
    }
  }
  st_->SetComputeRate(e, 0.0);
  if (!MakesBuckets(t)) {
    TaskDone(ei, t, j);
    return;
  }
  sync_->BucketReady(e.stage, e.replica);
  if (!sync_->DrainsEachBackward()) {
    TaskDone(ei, t, j);
    return;
  }
  // ZeRO-2/3: the backward ends once its gradients are reduced into their shards; the wait is
  // exposed DP communication.
  sync_->AfterReduced(e.stage, e.replica, [this, ei, t, j, since = st_->now()] {
    Executor& x = st_->exec(ei);
    const double wait = st_->now() - since;
    if (wait > 0) {
      x.b.exposed_dp_comm_s += wait;
      st_->trace.Slice(x.gpu, kTrackCompute, "wait for dp reduction", "idle", since, wait,
                       {{"micro_batch", t.micro_batch}, {"stage", int64_t(x.stage)}});
    }
    TaskDone(ei, t, j);
  });
}

bool Pipeline::MakesBuckets(const Task& t) const {
  const bool last_b = !t.forward && t.micro_batch == st_->m - 1;
  return !t.forward && sync_->reduces() &&
         ((st_->c.overlap_dp && last_b) || st_->c.zero_stage >= 2);
}

void Pipeline::TaskDone(int ei, Task t, int j) {
  Executor& e = st_->exec(ei);
  const double now = st_->now();
  if (!t.forward && st_->trace.enabled()) MemorySample(ei, -chunk_act_bytes_[size_t(j)]);
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
  st_->net.StartFlow(
      st_->topo->Route(st_->exec(x.src).gpu, st_->exec(x.dst).gpu), uint64_t(x.bytes),
      [this, s, start] {
        const Send y = sends_[s];
        free_sends_.push_back(s);
        Executor& src = st_->exec(y.src);
        st_->exec(y.dst).inbox[y.idx].arrived = true;
        const double t_now = st_->now();
        if (st_->trace.enabled()) {
          const Executor& dst = st_->exec(y.dst);
          const sim::TraceArgs args{{"bytes", int64_t(y.bytes)},
                                    {"achieved_GBps", y.bytes / (t_now - start) / 1e9}};
          sim::TraceArgs send = args, recv = args;
          send.emplace_back("to_gpu", int64_t(dst.gpu));
          recv.emplace_back("from_gpu", int64_t(src.gpu));
          const int64_t s_i =
              st_->trace.Slice(src.gpu, kTrackPp, "pp send", "pp", start, t_now - start, send);
          const int64_t r_i =
              st_->trace.Slice(dst.gpu, kTrackPp, "pp recv", "pp", start, t_now - start, recv);
          st_->trace.Flow(s_i, r_i);
          st_->trace.LinkTransfer(st_->topo->Route(src.gpu, dst.gpu), TraceRecorder::Ns(start),
                                  TraceRecorder::Ns(t_now), y.bytes);
        }
        TryStart(y.dst);
        if (!st_->c.p2p_overlapped()) {
          src.busy = false;
          src.b.pp_wait_s += t_now - y.produced_s;
          st_->trace.Slice(
              src.gpu, kTrackCompute, "blocked on pp send", "idle", y.produced_s,
              t_now - y.produced_s,
              {{"to_gpu", int64_t(st_->exec(y.dst).gpu)}, {"bytes", int64_t(y.bytes)}});
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
