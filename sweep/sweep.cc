#include "sweep/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "checkpoint/checkpoint_model.h"
#include "comm/topology.h"
#include "parallelism/memory.h"
#include "parallelism/model.h"
#include "run/monte_carlo.h"
#include "sim/parallel.h"
#include "sim/progress.h"
#include "sim/stats.h"

namespace trainsim::sweep {
namespace {

namespace par = trainsim::parallelism;
namespace ckpt = trainsim::checkpoint;
namespace run = trainsim::run;

std::string Num(int64_t v) { return std::to_string(v); }

std::string Gb(double bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

auto Tuple(const Candidate& c) {
  const par::ParallelConfig& p = c.parallel;
  return std::make_tuple(c.gpus, c.hardware, p.tp, p.cp, p.ep, p.etp, p.pp, p.dp,
                         p.first_stage_layers, p.last_stage_layers, p.micro_batch, int(p.schedule),
                         p.virtual_stages, int(p.recompute), p.sequence_parallel, p.zero_stage,
                         p.shard_group);
}

// --- serialisation of evaluations for the all-gather ------------------------------------------
class Writer {
 public:
  void I(int64_t v) { Raw(&v, sizeof v); }
  void D(double v) { Raw(&v, sizeof v); }
  void S(const std::string& s) {
    I(int64_t(s.size()));
    out_ += s;
  }
  std::string& str() { return out_; }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  bool done() const { return pos_ >= s_.size(); }
  bool ok() const { return ok_; }
  int64_t I() {
    int64_t v = 0;
    Raw(&v, sizeof v);
    return v;
  }
  double D() {
    double v = 0;
    Raw(&v, sizeof v);
    return v;
  }
  std::string S() {
    const int64_t n = I();
    if (n < 0 || pos_ + size_t(n) > s_.size()) {
      ok_ = false;
      return {};
    }
    std::string out = s_.substr(pos_, size_t(n));
    pos_ += size_t(n);
    return out;
  }

 private:
  void Raw(void* p, size_t n) {
    if (pos_ + n > s_.size()) {
      ok_ = false;
      return;
    }
    std::memcpy(p, s_.data() + pos_, n);
    pos_ += n;
  }
  const std::string& s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Only what evaluation computes travels; the layout itself is re-derived from the index.
void Write(Writer& w, const Evaluation& e) {
  w.I(e.index);
  w.I(e.rejected);
  w.S(e.reason);
  w.I(e.fits);
  w.D(e.memory_bytes_per_gpu);
  w.D(e.memory_shortfall_bytes);
  w.D(e.step_time_s);
  w.D(e.estimated_step_time_s);
  w.D(e.mfu);
  w.D(e.expected_ettr);
  w.D(e.checkpoint_interval_s);
  w.D(e.time_to_train_s);
  w.D(e.gpu_hours);
  w.D(e.cost_usd);
  w.I(e.confirmed);
  w.D(e.busy_fraction);
  w.D(e.gpu_watts);
  w.D(e.energy_kwh);
  w.D(e.energy_cost_usd);
  const step::StepBreakdown& b = e.breakdown;
  for (double v : {b.compute_s, b.exposed_tp_comm_s, b.exposed_cp_comm_s, b.exposed_ep_comm_s,
                   b.exposed_dp_comm_s, b.pp_wait_s, b.bubble_s, b.optimizer_s, b.other_s,
                   b.input_stall_s, b.host_overhead_s, b.compute_slowed_s, b.offload_wait_s}) {
    w.D(v);
  }
}

void Read(Reader& r, Evaluation* e) {
  e->index = r.I();
  e->rejected = r.I() != 0;
  e->reason = r.S();
  e->fits = r.I() != 0;
  e->memory_bytes_per_gpu = r.D();
  e->memory_shortfall_bytes = r.D();
  e->step_time_s = r.D();
  e->estimated_step_time_s = r.D();
  e->mfu = r.D();
  e->expected_ettr = r.D();
  e->checkpoint_interval_s = r.D();
  e->time_to_train_s = r.D();
  e->gpu_hours = r.D();
  e->cost_usd = r.D();
  e->confirmed = r.I() != 0;
  e->busy_fraction = r.D();
  e->gpu_watts = r.D();
  e->energy_kwh = r.D();
  e->energy_cost_usd = r.D();
  step::StepBreakdown& b = e->breakdown;
  for (double* v : {&b.compute_s, &b.exposed_tp_comm_s, &b.exposed_cp_comm_s, &b.exposed_ep_comm_s,
                    &b.exposed_dp_comm_s, &b.pp_wait_s, &b.bubble_s, &b.optimizer_s, &b.other_s,
                    &b.input_stall_s, &b.host_overhead_s, &b.compute_slowed_s, &b.offload_wait_s}) {
    *v = r.D();
  }
}

// Every rank evaluates `indices` with `fn` (index i goes to rank i mod size); all-gathers the
// results and stores them in *evals by index.
// With threads > 1 this rank's share runs on sim::ParallelFor, each result in its own slot and
// serialised in index order, so the bytes do not depend on the thread count (fn must be safe to
// call concurrently).
template <typename Fn>
Status Distribute(Communicator* comm, const std::vector<size_t>& indices,
                  std::vector<Evaluation>* evals, bool progress, const std::string& label,
                  int threads, Fn fn) {
  const int size = comm->size(), rank = comm->rank();
  std::vector<size_t> mine;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (int(k % size_t(size)) == rank) mine.push_back(indices[k]);
  }
  sim::ProgressBar::Options opts;
  opts.enabled = progress && rank == 0 && opts.enabled;
  sim::ProgressBar bar(label, mine.size(), opts);
  std::vector<Evaluation> out(mine.size());
  TRAINSIM_RETURN_IF_ERROR(
      sim::ParallelFor(int64_t(mine.size()), std::max(1, threads), [&](int64_t j) {
        out[size_t(j)] = fn((*evals)[mine[size_t(j)]]);
        bar.Add();
        return Status::Ok();
      }));
  bar.Finish();
  Writer w;
  for (const Evaluation& e : out) Write(w, e);
  Result<std::vector<std::string>> all = comm->AllGather(w.str());
  if (!all.ok()) return all.status();
  for (const std::string& part : *all) {
    Reader r(part);
    while (!r.done()) {
      Evaluation e;
      Read(r, &e);
      if (!r.ok() || e.index < 0 || size_t(e.index) >= evals->size()) {
        return Status::Internal("malformed sweep results from another rank");
      }
      const Candidate layout = (*evals)[size_t(e.index)].layout;
      e.layout = layout;
      (*evals)[size_t(e.index)] = std::move(e);
    }
  }
  return Status::Ok();
}

// Fills the derived metrics from a step time.
void Finalise(const SweepProblem& problem, const GoodputEstimate& g, Evaluation* e) {
  const int64_t tokens_per_step =
      int64_t(problem.base.parallel.global_batch) * problem.base.model.seq_len;
  const double steps = std::ceil(problem.token_budget / double(tokens_per_step));
  e->expected_ettr = g.expected_ettr;
  e->checkpoint_interval_s = g.interval_s;
  e->time_to_train_s = steps * e->step_time_s / std::max(g.expected_ettr, 1e-12);
  const int gpn = problem.base.topology.gpus_per_node;
  const double billed =
      e->layout.gpus + (problem.run.bill_spares ? double(problem.run.spare_nodes) * gpn : 0.0);
  e->gpu_hours = e->time_to_train_s / 3600.0 * billed;
  e->cost_usd = e->gpu_hours * problem.run.usd_per_gpu_hour;
  // Energy: the job's GPUs draw idle + (TDP − idle) × busy over the whole time to train (the
  // time lost to failures included: restarts and recomputation keep the GPUs powered), the
  // facility pue × that. 3.6e6 J per kWh.
  const EnergyModel& m = problem.energy;
  const double busy = std::clamp(e->busy_fraction, 0.0, 1.0);
  e->gpu_watts = m.tdp_watts * (m.idle_fraction + (1 - m.idle_fraction) * busy);
  e->energy_kwh = e->time_to_train_s * e->layout.gpus * e->gpu_watts * m.pue / 3.6e6;
  e->energy_cost_usd = e->energy_kwh * m.usd_per_kwh;
}

// The Monte Carlo run simulation of the top layouts (SweepOptions::trials).
Status RunMonteCarlo(const std::vector<SweepProblem>& problems, const SweepOptions& options,
                     Communicator* comm, SweepResult* res) {
  for (size_t i : res->top) {
    Evaluation& e = res->evaluations[i];
    const SweepProblem& problem = problems[size_t(e.layout.hardware)];
    if (!problem.step_time_fn) {
      return Status::InvalidArgument("Monte Carlo trials need a step-time function");
    }
    const int gpn = problem.base.topology.gpus_per_node;
    const int64_t tokens_per_step =
        int64_t(problem.base.parallel.global_batch) * problem.base.model.seq_len;
    const int64_t steps = int64_t(std::ceil(problem.token_budget / double(tokens_per_step)));
    run::RunConfig run = problem.run;
    run.nodes = e.layout.gpus / gpn;
    run.gpus_per_node = gpn;
    // A replica's stage is tp × cp GPUs, as scenarios::MakeRunConfig counts it (its CP ranks
    // share its weights and fail with it).
    run.tp = e.layout.parallel.tp * e.layout.parallel.cp;
    run.pp = e.layout.parallel.pp;
    run.dp = e.layout.parallel.dp;
    run.cluster_nodes = 0;
    run.faults.clear();  // the scenario's scheduled faults name its own layout's GPUs
    run.total_steps = steps;
    run.wall_time_limit.reset();
    run.checkpoint.interval.kind = ckpt::CheckpointInterval::Kind::kAuto;
    run.record_events = false;
    run.checkpoint.spec.parameters = problem.parameters;  // as ExpectedGoodput sizes it
    run::StepTimeCache cache(problem.step_time_fn(StepConfigFor(problem, e.layout)));
    const int64_t n = options.trials, size = comm->size(), rank = comm->rank();
    Result<std::vector<run::TrialOutcome>> mine =
        run::RunTrials(run, cache, n * rank / size, n * (rank + 1) / size);
    // Every rank reaches the all-gather even on error, so none waits forever.
    Writer w;
    w.I(mine.ok() ? 1 : 0);
    if (mine.ok()) {
      for (const run::TrialOutcome& t : *mine) {
        w.I(t.trial);
        w.D(t.wall_time_s);
        w.D(t.ettr);
        w.D(t.cost_usd);
      }
    } else {
      w.S(mine.status().message());
    }
    Result<std::vector<std::string>> all = comm->AllGather(w.str());
    if (!all.ok()) return all.status();
    std::vector<run::TrialOutcome> outcomes;
    for (const std::string& part : *all) {
      Reader r(part);
      if (r.I() == 0) {
        return Status::FailedPrecondition("Monte Carlo trials of " + DescribeLayout(e.layout) +
                                          ": " + r.S());
      }
      while (!r.done() && r.ok()) {
        run::TrialOutcome t;
        t.trial = r.I();
        t.wall_time_s = r.D();
        t.ettr = r.D();
        t.cost_usd = r.D();
        outcomes.push_back(t);
      }
    }
    std::vector<double> times, costs;
    for (const run::TrialOutcome& t : outcomes) {
      times.push_back(t.wall_time_s);
      costs.push_back(t.cost_usd);
    }
    std::sort(times.begin(), times.end());
    std::sort(costs.begin(), costs.end());
    // p10–p90: the middle 80% of the failure histories (the type-7 percentile whatif uses).
    if (!times.empty()) {
      e.mc_time_p10_s = sim::PercentileOfSorted(times, 0.1);
      e.mc_time_p90_s = sim::PercentileOfSorted(times, 0.9);
      e.mc_cost_p10_usd = sim::PercentileOfSorted(costs, 0.1);
      e.mc_cost_p90_usd = sim::PercentileOfSorted(costs, 0.9);
    }
    const run::MonteCarloSummary s = run::Summarize(std::move(outcomes));
    e.trials = s.trials;
    e.mc_ettr = s.ettr.mean;
    e.mc_time_to_train_s = s.wall_time_s.mean;
    e.mc_cost_usd = s.cost_usd.mean;
  }
  return Status::Ok();
}

}  // namespace

bool LayoutLess(const Candidate& a, const Candidate& b) { return Tuple(a) < Tuple(b); }

std::string DescribeLayout(const Candidate& c) {
  const par::ParallelConfig& p = c.parallel;
  std::string s = "tp " + Num(p.tp);
  if (p.cp > 1) s += " cp " + Num(p.cp);
  if (p.ep > 1) s += " ep " + Num(p.ep);
  if (p.etp > 1) s += " etp " + Num(p.etp);
  s += " pp " + Num(p.pp);
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0) {
    s += " (first " + Num(p.first_stage_layers) + " last " + Num(p.last_stage_layers) + ")";
  }
  s += " dp " + Num(p.dp) + " mb " + Num(p.micro_batch) + " " + par::ScheduleName(p.schedule);
  if (p.virtual_stages > 1) s += " v " + Num(p.virtual_stages);
  s += " recompute " + par::RecomputeName(p.recompute);
  if (p.sequence_parallel) s += " sp";
  s += " zero " + Num(p.zero_stage);
  if (p.shard_group > 0) s += " shard " + Num(p.shard_group);
  return s;
}

Result<GoodputEstimate> ExpectedGoodput(const run::RunConfig& run_template, int64_t parameters,
                                        int gpus, int gpus_per_node) {
  run::RunConfig run = run_template;
  run.nodes = gpus / gpus_per_node;
  run.gpus_per_node = gpus_per_node;
  GoodputEstimate g;
  g.mtbf_s = run::ClusterMtbfSeconds(run);
  ckpt::CheckpointSpec spec = run.checkpoint.spec;
  spec.parameters = parameters;
  ckpt::CheckpointHardware hw = run.checkpoint.hardware;
  hw.nodes = run.nodes;
  hw.gpus_per_node = gpus_per_node;
  Result<ckpt::CheckpointCosts> costs = ckpt::ComputeCheckpointCosts(spec, hw);
  if (!costs.ok()) return costs.status();
  g.checkpoint_cost_s = run.checkpoint.policy == ckpt::CheckpointPolicy::kSync
                            ? costs->persistent_write.seconds()
                            : costs->snapshot.seconds();
  const ckpt::RecoveryConfig& rc = run.recovery;
  const double load_s = run.checkpoint.policy == ckpt::CheckpointPolicy::kInMemory
                            ? costs->peer_load.seconds()
                            : costs->storage_load.seconds();
  g.restart_s = rc.DetectionDelay().seconds() + rc.scheduler_requeue.seconds() +
                rc.process_start.seconds() + rc.comm_init_base.seconds() +
                rc.comm_init_per_gpu.seconds() * gpus + load_s;
  if (!std::isfinite(g.mtbf_s) || g.mtbf_s <= 0) {
    g.expected_ettr = 1;  // no failures: never checkpoint, nothing lost
    g.interval_s = 0;
    return g;
  }
  g.interval_s = ckpt::DalyIntervalSeconds(g.checkpoint_cost_s, g.mtbf_s);
  g.expected_ettr =
      ckpt::DalyUsefulFraction(g.interval_s, g.checkpoint_cost_s, g.mtbf_s, g.restart_s);
  return g;
}

Status ValidateProblem(const SweepProblem& problem) {
  const int gpn = problem.base.topology.gpus_per_node;
  if (gpn < 1) return Status::InvalidArgument("the node must have at least one GPU");
  if (problem.gpu_counts.empty()) return Status::InvalidArgument("no GPU counts to sweep");
  for (int n : problem.gpu_counts) {
    if (n < 1 || n % gpn != 0) {
      return Status::InvalidArgument("--gpus " + Num(n) + ": the cluster holds whole nodes of " +
                                     Num(gpn) + " GPUs; use a positive multiple of " + Num(gpn));
    }
    comm::TopologySpec spec = problem.base.topology;
    spec.nodes = n / gpn;
    Status s = comm::ValidateTopologySpec(spec);
    if (!s.ok()) return s.WithPrefix("--gpus " + Num(n));
  }
  if (!(problem.token_budget > 0) || !std::isfinite(problem.token_budget)) {
    return Status::InvalidArgument("the token budget must be a positive number of tokens");
  }
  if (problem.base.parallel.global_batch < 1) {
    return Status::InvalidArgument("global_batch must be >= 1");
  }
  if (problem.micro_batches.empty()) return Status::InvalidArgument("no micro-batch sizes");
  if (problem.recompute_modes.empty() || problem.sequence_parallel.empty()) {
    return Status::InvalidArgument("no recompute modes or sequence-parallel settings to try");
  }
  for (int mb : problem.micro_batches) {
    if (mb < 1) return Status::InvalidArgument("micro-batch sizes must be >= 1");
  }
  // A CP degree asked for by name that no layout can use is said so, not dropped in silence.
  const int seq = problem.base.model.seq_len;
  for (int cp : problem.cp_degrees) {
    if (cp < 1 || (cp > 1 && seq % (2 * cp) != 0)) {
      return Status::InvalidArgument(
          "--cp " + Num(cp) + ": seq_len " + Num(seq) + " must split into 2 x cp = " + Num(2 * cp) +
          " equal chunks (CP's load-balanced halves per rank); use a cp with 2 x cp "
          "dividing " +
          Num(seq));
    }
  }
  return Status::Ok();
}

step::StepConfig StepConfigFor(const SweepProblem& problem, const Candidate& c) {
  step::StepConfig cfg = problem.base;
  cfg.parallel = c.parallel;
  cfg.topology.nodes = c.gpus / std::max(1, cfg.topology.gpus_per_node);
  cfg.allow_oom = false;
  cfg.report_gpu = 0;
  return cfg;
}

Evaluation EvaluateLayout(const SweepProblem& problem, const Candidate& c, EstimatorCache* cache) {
  Evaluation e;
  e.layout = c;
  const step::StepConfig cfg = StepConfigFor(problem, c);
  const int gpn = cfg.topology.gpus_per_node;
  Status valid = par::ValidateLayout(cfg.model, cfg.parallel, c.gpus, gpn);
  if (!valid.ok()) {
    e.rejected = true;
    e.reason = valid.message();
    return e;
  }
  const par::MemoryReport mem = par::EstimateMemory(cfg.model, cfg.parallel, cfg.gpu.memory_bytes,
                                                    gpn, cfg.memory, /*suggest=*/false);
  e.memory_bytes_per_gpu = mem.peak_bytes;
  if (!mem.fits) {
    e.rejected = true;
    // Against what a layout may use (the GPU less the headroom), as the reason says: a layout
    // over the usable memory but under the GPU's is short too.
    e.memory_shortfall_bytes = mem.peak_bytes - (mem.capacity_bytes - cfg.memory.headroom_bytes);
    e.reason = "does not fit in GPU memory: " + mem.reason;
    return e;
  }
  e.fits = true;
  Result<StepEstimate> est = EstimateStep(cfg, cache);
  if (!est.ok()) {
    e.rejected = true;
    e.fits = false;
    e.reason = est.status().message();
    return e;
  }
  Result<GoodputEstimate> g = ExpectedGoodput(problem.run, problem.parameters, c.gpus, gpn);
  if (!g.ok()) {
    e.rejected = true;
    e.fits = false;
    e.reason = g.status().message();
    return e;
  }
  e.step_time_s = est->time_s;
  e.estimated_step_time_s = est->time_s;
  e.mfu = est->mfu;
  // The pipeline's work without its bubble, (p − 1) of v·m + p − 1 chunk passes (docs/sweep.md),
  // over the step: the share the GPU computes (for energy; estimates only prune).
  {
    const par::ParallelConfig& p = cfg.parallel;
    const double m = double(p.global_batch) / (double(p.micro_batch) * p.dp);
    const double vm = double(std::max(1, p.virtual_stages)) * m;
    e.busy_fraction = est->time_s > 0 ? est->pipeline_s * vm / (vm + p.pp - 1) / est->time_s : 0;
  }
  Finalise(problem, *g, &e);
  return e;
}

// One layout timed by the step simulation: its simulated step time replaces the estimate.
Evaluation ConfirmLayout(const SweepProblem& problem, const Evaluation& in) {
  Evaluation e = in;
  const step::StepConfig cfg = StepConfigFor(problem, in.layout);
  Result<step::StepResult> r = step::SimulateStep(cfg);
  if (!r.ok()) {
    e.rejected = true;
    e.fits = false;
    e.reason = "step simulation: " + r.status().message();
    return e;
  }
  Result<GoodputEstimate> g =
      ExpectedGoodput(problem.run, problem.parameters, in.layout.gpus, cfg.topology.gpus_per_node);
  if (!g.ok()) {  // EvaluateLayout computed it already; kept as a guard
    e.rejected = true;
    e.fits = false;
    e.reason = "expected ETTR: " + g.status().message();
    return e;
  }
  e.step_time_s = r->time_s;
  e.mfu = r->mfu;
  // The share of the step the GPUs compute: the mean over the pipeline stages of the reported
  // replica (StepResult::stage_breakdown).
  double compute = 0;
  for (const step::StepBreakdown& b : r->stage_breakdown) compute += b.compute_s;
  if (r->stage_breakdown.empty()) {
    compute = r->breakdown.compute_s;
  } else {
    compute /= double(r->stage_breakdown.size());
  }
  e.busy_fraction = r->time_s > 0 ? compute / r->time_s : 0;
  e.breakdown = r->breakdown;
  e.confirmed = true;
  Finalise(problem, *g, &e);
  return e;
}

namespace {

// True when selective recomputation recomputes nothing for this layout: no kernel of any of the
// model's layer kinds is re-run by its modules (KernelOp::recomputed_by; e.g. "layernorm" on a
// dense model, whose norms are fused into the linears; a module's collectives are re-run only
// with its kernels). The step simulation then times recompute selective exactly as recompute
// none (step/pass_costs.cc adds a sum over no kernels, 0.0, to the backward), and only the
// memory differs, which the ranking checked already.
bool SelectiveRecomputesNothing(const par::ModelSpec& m, const par::ParallelConfig& p) {
  for (const par::LayerKind& kind : par::DistinctLayerKinds(m)) {
    for (const par::KernelOp& op : par::LayerOps(m, p.split(), p.micro_batch, kind)) {
      if (op.recomputed_by & p.recompute_modules) return false;
    }
  }
  return true;
}

// What the step simulation of a layout depends on: the layout tuple, with recompute selective
// read as none where it recomputes nothing. Layouts with one key share one simulation.
auto SimulationKey(const SweepProblem& problem, const Candidate& c) {
  Candidate k = c;
  if (k.parallel.recompute == par::Recompute::kSelective &&
      SelectiveRecomputesNothing(problem.base.model, k.parallel)) {
    k.parallel.recompute = par::Recompute::kNone;
  }
  return Tuple(k);
}

// `in` confirmed by the simulation of `sim` (same SimulationKey): what ConfirmLayout would give.
Evaluation ConfirmedAs(const SweepProblem& problem, const Evaluation& in, const Evaluation& sim) {
  Evaluation e = in;
  if (!sim.confirmed) {
    e.rejected = true;
    e.fits = false;
    e.reason = sim.reason;
    return e;
  }
  Result<GoodputEstimate> g = ExpectedGoodput(problem.run, problem.parameters, in.layout.gpus,
                                              problem.base.topology.gpus_per_node);
  if (!g.ok()) {  // the same as for `sim`, which passed; kept as a guard
    e.rejected = true;
    e.fits = false;
    e.reason = "expected ETTR: " + g.status().message();
    return e;
  }
  e.step_time_s = sim.step_time_s;
  e.mfu = sim.mfu;
  e.busy_fraction = sim.busy_fraction;
  e.breakdown = sim.breakdown;
  e.confirmed = true;
  Finalise(problem, *g, &e);
  return e;
}

// Enumerates and estimates one problem (hardware `hardware`); FailedPrecondition when nothing
// fits, naming the binding constraint and what relaxes it.
Result<SweepResult> EstimateAll(const SweepProblem& problem, int hardware,
                                const SweepOptions& options, Communicator* comm) {
  TRAINSIM_RETURN_IF_ERROR(ValidateProblem(problem));
  SweepResult res;
  std::vector<Candidate> layouts = EnumerateLayouts(problem);
  res.evaluations.resize(layouts.size());
  std::vector<size_t> all(layouts.size());
  for (size_t i = 0; i < layouts.size(); ++i) {
    layouts[i].hardware = hardware;
    res.evaluations[i].index = int64_t(i);
    res.evaluations[i].layout = layouts[i];
    all[i] = i;
  }
  const std::string label =
      problem.hardware_name.empty() ? std::string("sweep") : "sweep " + problem.hardware_name;
  // On options.threads threads, sharing one estimator cache (thread-safe; each value computed
  // once, a pure function of its key, so the results do not depend on which thread timed what).
  EstimatorCache cache;
  TRAINSIM_RETURN_IF_ERROR(Distribute(comm, all, &res.evaluations, options.progress, label,
                                      options.threads, [&](const Evaluation& in) {
                                        Evaluation e = EvaluateLayout(problem, in.layout, &cache);
                                        e.index = in.index;
                                        return e;
                                      }));
  for (const Evaluation& e : res.evaluations) (e.rejected ? res.rejected : res.evaluated)++;

  if (res.evaluated == 0) {
    // The smallest shortfall among layouts that were valid but too big.
    const Evaluation* best = nullptr;
    for (const Evaluation& e : res.evaluations) {
      if (e.memory_shortfall_bytes > 0 &&
          (!best || e.memory_shortfall_bytes < best->memory_shortfall_bytes ||
           (e.memory_shortfall_bytes == best->memory_shortfall_bytes &&
            LayoutLess(e.layout, best->layout)))) {
        best = &e;
      }
    }
    if (!best) {
      std::string why = res.evaluations.empty() ? "no layouts" : res.evaluations[0].reason;
      if (layouts.empty()) {
        return Status::FailedPrecondition(
            "no layout of the model divides onto these GPU counts: the binding constraint is "
            "divisibility (the global batch of " +
            Num(problem.base.parallel.global_batch) +
            " sequences must split into micro-batch x DP, TP must divide the heads, PP at most "
            "the layers); relax it with other --gpus or --micro-batches, or a global batch with "
            "more factors of two");
      }
      return Status::FailedPrecondition("no valid layout of the model on these GPU counts (" +
                                        Num(int64_t(layouts.size())) +
                                        " tried); the first rejected: " + why);
    }
    const double capacity = problem.base.gpu.memory_bytes;
    std::string fix = "GPUs with at least " +
                      Gb(best->memory_bytes_per_gpu + problem.base.memory.headroom_bytes) +
                      " of memory";
    // More GPUs: the smallest multiple (up to 64×) of the largest count on which a layout fits.
    SweepProblem bigger = problem;
    // The least memory a degree split can take: the smallest micro-batch, full recomputation
    // when the sweep may use it (no other technique lowers activations further), so a split that
    // fits nowhere else is skipped after one memory check instead of fifteen.
    bigger.micro_batches = {
        *std::min_element(problem.micro_batches.begin(), problem.micro_batches.end())};
    if (std::find(problem.recompute_modes.begin(), problem.recompute_modes.end(),
                  par::Recompute::kFull) != problem.recompute_modes.end()) {
      bigger.recompute_modes = {par::Recompute::kFull};
    }
    const int largest = *std::max_element(problem.gpu_counts.begin(), problem.gpu_counts.end());
    for (int k = 2; k <= 64; k *= 2) {
      bigger.gpu_counts = {largest * k};
      if (!ValidateProblem(bigger).ok()) break;
      bool found = false;
      for (const Candidate& c : EnumerateLayouts(bigger)) {
        const step::StepConfig cfg = StepConfigFor(bigger, c);
        if (!par::ValidateLayout(cfg.model, cfg.parallel, c.gpus, cfg.topology.gpus_per_node)
                 .ok()) {
          continue;
        }
        if (par::EstimateMemory(cfg.model, cfg.parallel, capacity, cfg.topology.gpus_per_node,
                                cfg.memory, /*suggest=*/false)
                .fits) {
          fix += ", or " + Num(largest * k) + " GPUs (e.g. " + DescribeLayout(c) + ")";
          found = true;
          break;
        }
      }
      if (found) break;
    }
    const double headroom = problem.base.memory.headroom_bytes;
    const std::string binding = headroom > 0 && best->memory_shortfall_bytes <= headroom
                                    ? "; the binding constraint is the memory headroom (" +
                                          Gb(headroom) +
                                          " kept free): --memory-headroom 0 would fit it"
                                    : std::string();
    return Status::FailedPrecondition(
        "no layout of the model fits in GPU memory on " + Num(problem.gpu_counts.size()) +
        " GPU count(s) (" + Num(res.rejected) + " layouts rejected); the smallest shortfall is " +
        Gb(best->memory_shortfall_bytes) + " per GPU, for " + DescribeLayout(best->layout) +
        " on " + Num(best->layout.gpus) + " GPUs (" + best->reason + "); would fit: " + fix +
        binding);
  }
  return res;
}

// Confirms with the step simulation the best K distinct layouts by the objective and the
// Pareto front (with every layout the same in effect as one of them), then whatever the
// confirmed numbers moved into them, until the top K and the front by the current numbers are
// all confirmed: then no estimate could rank above a confirmed row.
Status ConfirmUntilStable(const std::vector<SweepProblem>& problems, const SweepOptions& options,
                          Communicator* comm, SweepResult* res) {
  // A guard: each round confirms at least one more layout, and in practice two or three rounds
  // settle it (docs/sweep.md); past this the rows shown are still confirmed ones.
  constexpr int kMaxConfirmRounds = 64;
  std::vector<Evaluation>& evals = res->evaluations;
  std::vector<bool> tried(evals.size(), false);
  std::map<decltype(Tuple(Candidate{})), size_t> simulated;  // SimulationKey → layout simulated
  res->confirmed = 0;
  for (int round = 0; round < kMaxConfirmRounds; ++round) {
    std::vector<size_t> picked = RankDistinct(evals, options.objective, false);
    picked.resize(std::min<size_t>(picked.size(), size_t(options.top_k)));
    for (size_t i : ParetoFront(evals, false, options.pareto.first, options.pareto.second)) {
      picked.push_back(i);
    }
    std::vector<size_t> confirm;
    for (size_t i = 0; i < evals.size(); ++i) {
      if (tried[i] || evals[i].rejected) continue;
      for (size_t j : picked) {
        if (i == j || SameInEffect(evals[i], evals[j])) {
          confirm.push_back(i);
          break;
        }
      }
    }
    if (confirm.empty()) break;
    res->confirm_rounds = round + 1;
    // One simulation per SimulationKey (the lowest index, in this round or an earlier one);
    // the layouts that share it are confirmed by its result.
    std::vector<size_t> simulate;
    std::vector<std::pair<size_t, size_t>> shared;  // (layout, the layout simulated for it)
    for (size_t i : confirm) {
      tried[i] = true;
      const SweepProblem& problem = problems[size_t(evals[i].layout.hardware)];
      auto [it, fresh] = simulated.emplace(SimulationKey(problem, evals[i].layout), i);
      if (fresh) {
        simulate.push_back(i);
      } else {
        shared.emplace_back(i, it->second);
      }
    }
    TRAINSIM_RETURN_IF_ERROR(Distribute(
        comm, simulate, &evals, options.progress, "confirm", options.threads,
        [&](const Evaluation& in) { return ConfirmLayout(problems[in.layout.hardware], in); }));
    for (const auto& [i, sim] : shared) {
      evals[i] = ConfirmedAs(problems[size_t(evals[i].layout.hardware)], evals[i], evals[sim]);
    }
    res->confirmed += int64_t(confirm.size());
  }
  return Status::Ok();
}

// The printed rows' SameInEffect layouts.
void FillEquivalents(SweepResult* res) {
  std::vector<size_t> shown = res->top;
  shown.insert(shown.end(), res->pareto.begin(), res->pareto.end());
  std::sort(shown.begin(), shown.end());
  shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
  res->collapsed = 0;
  for (size_t i : shown) {
    Evaluation& rep = res->evaluations[i];
    rep.equivalents.clear();
    for (const Evaluation& e : res->evaluations) {
      if (e.index != rep.index && e.confirmed && SameInEffect(e, rep)) {
        rep.equivalents.push_back(e.index);
      }
    }
    res->collapsed += int64_t(rep.equivalents.size());
  }
}

}  // namespace

Result<SweepResult> RunSweep(const SweepProblem& problem, const SweepOptions& options,
                             Communicator* comm) {
  return RunSweeps({problem}, options, comm);
}

Result<SweepResult> RunSweeps(const std::vector<SweepProblem>& problems,
                              const SweepOptions& options, Communicator* comm) {
  if (problems.empty()) return Status::InvalidArgument("no hardware to sweep");
  if (options.top_k < 1) return Status::InvalidArgument("--top must be >= 1");
  SweepResult res;
  Status first_error;
  for (size_t h = 0; h < problems.size(); ++h) {
    Result<SweepResult> part = EstimateAll(problems[h], int(h), options, comm);
    if (!part.ok()) {
      // Several GPU types: one on which nothing fits is listed and the others ranked.
      if (problems.size() == 1 || part.status().code() != Status::Code::kFailedPrecondition) {
        return part.status();
      }
      if (first_error.ok()) first_error = part.status();
      res.skipped_hardware.emplace_back(problems[h].hardware_name, part.status().message());
      continue;
    }
    const int64_t offset = int64_t(res.evaluations.size());
    for (Evaluation& e : part->evaluations) {
      e.index += offset;
      res.evaluations.push_back(std::move(e));
    }
  }
  if (res.skipped_hardware.size() == problems.size()) return first_error;
  TRAINSIM_RETURN_IF_ERROR(ConfirmUntilStable(problems, options, comm, &res));
  res.evaluated = res.rejected = 0;
  for (const Evaluation& e : res.evaluations) (e.rejected ? res.rejected : res.evaluated)++;
  res.top = RankDistinct(res.evaluations, options.objective, /*confirmed_only=*/true);
  res.top.resize(std::min<size_t>(res.top.size(), size_t(options.top_k)));
  res.pareto = ParetoFront(res.evaluations, /*confirmed_only=*/true, options.pareto.first,
                           options.pareto.second);
  FillEquivalents(&res);
  if (options.trials > 0) TRAINSIM_RETURN_IF_ERROR(RunMonteCarlo(problems, options, comm, &res));
  return res;
}

}  // namespace trainsim::sweep
