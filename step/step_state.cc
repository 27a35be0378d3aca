#include "step/step_state.h"

#include <cstdio>
#include <limits>

#include "step/pass_costs.h"

namespace trainsim::step {

StepState::StepState(const StepConfig& config, const comm::Topology* topology,
                     const parallelism::Layout* layout_in, std::vector<int> replicas_in,
                     const std::map<int, double>& slowdown, const SimulateOptions& options)
    : cfg(config),
      c(config.parallel),
      topo(topology),
      layout(layout_in),
      net(&engine, topology),
      replicas(std::move(replicas_in)),
      v(ChunksPerRank(config.parallel)),
      m(config.parallel.num_micro_batches()),
      nic_share(NicShare(config.parallel, topology->spec())),
      trace(options.record_trace, options.trace_microbatches) {
  for (size_t r = 0; r < replicas.size(); ++r) {
    for (int s = 0; s < c.pp; ++s) {
      Executor e;
      e.replica = int(r);
      e.stage = s;
      e.gpu = layout->GpuOf({0, s, replicas[r]});
      // The TP and CP peers of a stage work in lockstep: the slowest sets the pace.
      for (int k = 0; k < c.cp; ++k) {
        for (int t = 0; t < c.tp; ++t) {
          auto it = slowdown.find(layout->GpuOf({t, s, replicas[r], k}));
          if (it != slowdown.end()) e.slow = std::max(e.slow, it->second);
        }
      }
      e.inbox.assign(size_t(2 * v * m), Executor::Msg{});
      execs.push_back(std::move(e));
    }
  }
  // The busiest node's loader: it loads a micro-batch for every replica whose first stage
  // (TP and CP rank 0, which loads and shares with its peers) sits on it.
  if (LoaderSamplesPerSecond(cfg.input) < std::numeric_limits<double>::infinity()) {
    std::map<int, int> per_node;
    int most = 0;
    for (int d = 0; d < c.dp; ++d) {
      most = std::max(most, ++per_node[topo->node_of(layout->GpuOf({0, 0, d}))]);
    }
    loader_s_per_micro_batch = LoaderSecondsPerMicroBatch(cfg.input, double(c.micro_batch) * most);
    loader_queued = QueuedMicroBatches(cfg.input, most);
    loader_replicas = most;
  }
}

void StepState::Accrue(Executor& e) {
  const double t = now();
  if (e.comm_share > 0 && e.compute_rate > 0) {
    e.lost_s += std::min(e.comm_share, max_comm_share()) * e.compute_rate * (t - e.accrued_at);
  }
  e.accrued_at = t;
}

void StepState::AddCommShare(int ei, double share) {
  Executor& e = exec(ei);
  Accrue(e);
  e.comm_share += share;
  // Shares are added and removed in pairs; what rounding leaves of the sum is no collective.
  if (e.comm_share < 1e-12) e.comm_share = 0;
}

void StepState::SetComputeRate(Executor& e, double rate) {
  Accrue(e);
  e.compute_rate = rate;
}

double StepState::step_end() const {
  double end = 0;
  for (const Executor& e : execs) end = std::max(end, e.end_s);
  return end;
}

StepBreakdown StepState::Breakdown(int replica, int stage) const {
  StepBreakdown b = execs[size_t(replica * c.pp + stage)].b;
  const double end = step_end();
  const double accounted = b.total_s();
  b.other_s += std::max(0.0, end - accounted);
  return b;
}

std::string FormatNumber(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

comm::FlowNetwork* StepState::scratch_net() {
  if (scratch_net_ == nullptr) {
    scratch_engine_ = std::make_unique<sim::Engine>();
    scratch_net_ = std::make_unique<comm::FlowNetwork>(scratch_engine_.get(), topo);
  }
  return scratch_net_.get();
}

Status StepState::TooLong(double s) {
  return Status::OutOfRange("one pipeline task would take " + FormatNumber("%.3g", s) +
                            " s of simulated time; check the model size and slowdowns");
}

}  // namespace trainsim::step
