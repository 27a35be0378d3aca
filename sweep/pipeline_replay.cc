#include "sweep/pipeline_replay.h"

#include <cstdint>
#include <queue>
#include <tuple>

#include "parallelism/schedule.h"

namespace trainsim::sweep {
namespace {

using parallelism::Task;

// Periods of p micro-batches replayed before extending linearly (see ReplayPipeline).
constexpr int64_t kPeriodsReplayed = 4;

class Replay {
 public:
  Replay(const parallelism::ParallelConfig& c, const std::vector<ReplayPass>& passes, double send_s,
         double send_latency_s)
      : c_(c),
        passes_(passes),
        send_s_(send_s),
        send_latency_s_(send_latency_s),
        v_(c.schedule == parallelism::PipelineSchedule::kInterleaved1F1B ? c.virtual_stages : 1),
        m_(c.num_micro_batches()),
        orders_(parallelism::BuildSchedule(c.schedule, c.pp, v_, m_)),
        ranks_(size_t(c.pp)) {
    for (Rank& r : ranks_) r.arrived.assign(size_t(2 * v_ * m_), false);
    out_.compute_done_s.assign(size_t(c.pp), 0.0);
    out_.bucket_passes.resize(size_t(c.pp));
  }

  PipelineReplay Run() {
    for (int r = 0; r < c_.pp; ++r) TryStart(r);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = std::get<0>(e);
      if (std::get<2>(e) == kTaskEnd) {
        TaskEnd(std::get<3>(e));
      } else {
        SendDone(size_t(std::get<3>(e)));
      }
    }
    return std::move(out_);
  }

 private:
  enum Kind { kTaskEnd, kSendDone };
  using Event = std::tuple<double, uint64_t, int, int>;  // time, sequence, kind, rank or send
  struct Rank {
    size_t next = 0;
    bool busy = false, computing = false, done = false;
    std::vector<size_t> pending_in;  // blocking sends to it, waiting for its task to end
    std::vector<bool> arrived;       // [direction][chunk][micro-batch]
  };
  struct Send {
    int src = 0, dst = 0;
    size_t idx = 0;
  };

  void At(double t, Kind kind, int who) { events_.emplace(t, seq_++, kind, who); }
  size_t Index(bool forward, int chunk, int mb) const {
    return (size_t(forward ? 0 : 1) * size_t(v_) + size_t(chunk)) * size_t(m_) + size_t(mb);
  }
  const Task& Current(int r) const { return orders_[size_t(r)][ranks_[size_t(r)].next]; }

  void TryStart(int r) {
    Rank& x = ranks_[size_t(r)];
    if (x.busy || x.done) return;
    const Task& t = Current(r);
    const int j = t.chunk * c_.pp + r, last = c_.pp * v_ - 1;
    if ((t.forward ? j > 0 : j < last) && !x.arrived[Index(t.forward, t.chunk, t.micro_batch)]) {
      return;
    }
    x.busy = x.computing = true;
    const ReplayPass& p = passes_[size_t(j)];
    const double pass = t.forward ? p.fwd_s : p.bwd_s;
    const bool makes_buckets =
        !t.forward && c_.dp > 1 && t.micro_batch == m_ - 1 && c_.zero_stage < 2;
    if (makes_buckets) out_.bucket_passes[size_t(r)].emplace_back(now_ + p.pre_s, pass);
    At(now_ + p.pre_s + pass, kTaskEnd, r);
  }

  void TaskEnd(int r) {
    Rank& x = ranks_[size_t(r)];
    const Task t = Current(r);
    x.busy = x.computing = false;
    std::vector<size_t> waiting;
    waiting.swap(x.pending_in);
    // The sends it held back start together into it and share its ingress link: equal flows,
    // so each drains at 1/k of the rate and they end together (the latency paid once).
    const double k = double(waiting.size());
    for (size_t s : waiting) {
      At(now_ + k * (send_s_ - send_latency_s_) + send_latency_s_, kSendDone, int(s));
    }
    const int j = t.chunk * c_.pp + r, last = c_.pp * v_ - 1;
    if ((t.forward ? j < last : j > 0) && c_.pp > 1) {
      const int dst_j = t.forward ? j + 1 : j - 1;
      const int dst = dst_j % c_.pp;
      sends_.push_back({r, dst, Index(t.forward, dst_j / c_.pp, t.micro_batch)});
      const size_t s = sends_.size() - 1;
      if (c_.p2p_overlapped()) {
        At(now_ + send_s_, kSendDone, int(s));
      } else {
        x.busy = true;  // blocked until the send drains
        if (ranks_[size_t(dst)].computing) {
          ranks_[size_t(dst)].pending_in.push_back(s);
        } else {
          At(now_ + send_s_, kSendDone, int(s));
        }
        return;
      }
    }
    Advance(r);
  }

  void SendDone(size_t s) {
    const Send x = sends_[s];
    ranks_[size_t(x.dst)].arrived[x.idx] = true;
    TryStart(x.dst);
    if (!c_.p2p_overlapped()) {
      ranks_[size_t(x.src)].busy = false;
      Advance(x.src);
    }
  }

  void Advance(int r) {
    Rank& x = ranks_[size_t(r)];
    if (++x.next == orders_[size_t(r)].size()) {
      x.done = true;
      out_.compute_done_s[size_t(r)] = now_;
      return;
    }
    TryStart(r);
  }

  const parallelism::ParallelConfig& c_;
  const std::vector<ReplayPass>& passes_;
  double send_s_;
  double send_latency_s_;
  int v_;
  int64_t m_;
  std::vector<std::vector<Task>> orders_;
  std::vector<Rank> ranks_;
  std::vector<Send> sends_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  double now_ = 0;
  PipelineReplay out_;
};

}  // namespace

PipelineReplay ReplayPipeline(const parallelism::ParallelConfig& c,
                              const std::vector<ReplayPass>& passes, double send_s,
                              double send_latency_s) {
  const int64_t m = c.num_micro_batches(), p = c.pp;
  if (m <= kPeriodsReplayed * p || m % p != 0) {
    return Replay(c, passes, send_s, send_latency_s).Run();
  }
  // Once warm, the schedule repeats every p micro-batches (Megatron-LM's interleaved schedule
  // groups micro-batches by p): replay one and two periods beyond the warm-up and extend each
  // rank's times by the difference for the remaining periods.
  auto with = [&](int64_t micro_batches) {
    parallelism::ParallelConfig x = c;
    x.global_batch = micro_batches * c.micro_batch * c.dp;
    return Replay(x, passes, send_s, send_latency_s).Run();
  };
  const PipelineReplay a = with((kPeriodsReplayed - 1) * p);
  PipelineReplay b = with(kPeriodsReplayed * p);
  const double periods = double(m - kPeriodsReplayed * p) / double(p);
  // Every bucket pass shifts with its rank: they are each chunk's last backward (the replay
  // records none under ZeRO-2/3, whose backwards hold their own reductions).
  for (size_t r = 0; r < b.compute_done_s.size(); ++r) {
    const double shift = (b.compute_done_s[r] - a.compute_done_s[r]) * periods;
    b.compute_done_s[r] += shift;
    for (auto& [start, dur] : b.bucket_passes[r]) start += shift;
  }
  return b;
}

}  // namespace trainsim::sweep
