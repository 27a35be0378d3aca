// The step simulation's driver: validate → plan replicas → pass costs → run → assemble result.
// The parts: pass_costs (what a pass and a step's traffic cost), replica_plan (which replicas
// differ), pipeline (the executors), gradient_sync (DP reduction, optimizer, ZeRO gathers),
// step_trace (the Chrome trace). docs/step-simulation.md explains the model.
#include "step/step_simulation.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "step/event_streams.h"
#include "step/flex_dispatch.h"
#include "step/gradient_sync.h"
#include "step/pass_costs.h"
#include "step/pipeline.h"
#include "step/priced_ops.h"
#include "step/replica_plan.h"
#include "step/step_state.h"

namespace trainsim::step {
namespace {

using namespace parallelism;  // NOLINT: the closed-form models this simulation runs

// The step's compute alone, at the slowest GPU's speed, must fit sim::Time comfortably.
Status CheckStepLength(const ParallelConfig& c, const std::vector<ChunkCost>& costs,
                       double max_slowdown) {
  double total = 0;
  for (const ChunkCost& k : costs) {
    total += k.fwd_compute_s + k.fwd_comm_s() + k.bwd_compute_s + k.bwd_comm_s() + k.fwd_host_s +
             k.bwd_host_s + k.fwd_offload_s + k.bwd_offload_s;
  }
  total *= double(c.num_micro_batches()) * max_slowdown;
  if (!(total < 1e9)) {
    return Status::OutOfRange("one step would take about " + FormatNumber("%.3g", total) +
                              " s of simulated time, beyond what trainsim simulates; check the "
                              "model size, batch and slowdowns");
  }
  return Status::Ok();
}

void FillMetrics(const StepConfig& cfg, int gpus, StepResult* res) {
  const ParallelConfig& c = cfg.parallel;
  const double n = gpus;
  res->model_flops = ModelFlopsPerIteration(cfg.model, c.global_batch);
  res->hardware_flops =
      HardwareFlopsPerIteration(cfg.model, c.global_batch, c.recompute, c.recompute_modules,
                                FullyRecomputedFraction(cfg.model, c));
  res->tokens_per_s = double(c.global_batch) * cfg.model.seq_len / res->time_s;
  res->tflops_per_gpu = res->hardware_flops / (res->time_s * n) / 1e12;
  res->mfu = res->model_flops / (res->time_s * n * cfg.gpu.peak_flops);
  res->hfu = res->hardware_flops / (res->time_s * n * cfg.gpu.peak_flops);
}

CalibrationUse DescribeCalibration(const StepConfig& cfg, const CalibratedTpTimer& tp) {
  CalibrationUse u;
  if (!cfg.calibration) return u;
  u.used = true;
  u.file = cfg.calibration->path();
  u.gpu = cfg.calibration->gpu_name();
  u.sample = cfg.calibration->is_sample();
  const GemmCalibration cal = GemmCalibrationOf(cfg);
  const GemmCoverage g = CountCalibratedGemms(cfg.gpu, cfg.compute, &cal, PricedGemmOps(cfg));
  u.gemm_shapes = g.shapes;
  u.gemm_shapes_calibrated = g.calibrated;
  for (const auto& [name, calibrated] : tp.use()) {
    (calibrated ? u.collectives_calibrated : u.collectives_modelled).push_back(name);
  }
  return u;
}

// Simulates the step of `cfg`, or, with `micro_batches` > 0, its first that many micro-batches
// (the same layout, checks and costs; the steady-state extrapolation below), recording the
// time and kind of every event it runs in `events` unless that is null.
Result<StepResult> SimulateStepOnce(const StepConfig& cfg, const ClusterState& state,
                                    const SimulateOptions& options, int64_t micro_batches = 0,
                                    EventStream* events = nullptr) {
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
  Result<ReplicaPlan> plan = PlanReplicas(*topo, layout, state);
  if (!plan.ok()) return plan.status();

  StepResult res;
  res.memory =
      EstimateMemory(cfg.model, c, cfg.gpu.memory_bytes, topo->gpus_per_node(), cfg.memory);
  if (!cfg.allow_oom) TRAINSIM_RETURN_IF_ERROR(parallelism::FitStatus(res.memory));

  CalibratedTpTimer tp(&*topo, layout.TpGroup(0), cfg.calibration.get());
  CalibratedTpTimer cp(&*topo, layout.CpGroup(0), cfg.calibration.get());
  CalibratedTpTimer ep(&*topo, layout.EpGroup(0), cfg.calibration.get());
  CalibratedTpTimer etp(&*topo, ExpertTpGroup(c), cfg.calibration.get());
  CalibratedTpTimer ep_node(&*topo, NvlinkPeers(*topo, layout.EpGroup(0)), cfg.calibration.get());
  const GroupTimers timers{&tp, c.cp > 1 ? &cp : nullptr, c.ep > 1 ? &ep : nullptr,
                           c.etp > 1 ? &etp : nullptr, c.ep > 1 ? &ep_node : nullptr};
  Result<std::vector<ChunkCost>> costs = ChunkCosts(cfg, GemmCalibrationOf(cfg), timers);
  if (!costs.ok()) return costs.status();
  TRAINSIM_RETURN_IF_ERROR(CheckStepLength(c, *costs, plan->max_slowdown()));

  StepConfig shorter;
  if (micro_batches > 0) {
    shorter = cfg;
    shorter.parallel.global_batch = micro_batches * c.micro_batch * c.dp;
  }
  StepState st(micro_batches > 0 ? shorter : cfg, &*topo, &layout, plan->replicas, plan->slowdown,
               options);
  if (events != nullptr) st.engine.RecordTimes(&events->times, &events->kinds);
  for (const auto& [link, factor] : plan->link_factor) st.net.SetLinkBandwidthFactor(link, factor);
  // The loader's time per step must fit sim::Time as the compute's does (CheckStepLength).
  const double loading =
      st.loader_s_per_micro_batch * double(c.num_micro_batches()) + cfg.host.step_s;
  if (!(loading < 1e9)) {
    return Status::OutOfRange("the data loader would take about " + FormatNumber("%.3g", loading) +
                              " s per step, beyond what trainsim simulates; check input.workers, "
                              "input.cpu_ms_per_sample, input.read_gbyte_per_s and "
                              "input.bytes_per_sample");
  }
  st.forward_s.assign(size_t(c.pp), 0.0);
  for (size_t j = 0; j < costs->size(); ++j) {
    st.forward_s[j % size_t(c.pp)] += (*costs)[j].fwd_compute_s + (*costs)[j].fwd_comm_s();
  }
  GradientSync sync(&st);
  Pipeline pipeline(&st, std::move(*costs), &sync);
  TRAINSIM_RETURN_IF_ERROR(pipeline.Run());

  res.time_s = st.step_end();
  // The step above starts with the loader's prefetch queue full. Over many steps the loader
  // loads all m micro-batches of each, so one slower than the GPUs sets the step at m · t
  // (not (m − queue) · t: the queue refills only as fast as the loader runs); the GPUs idle the
  // difference waiting for input (docs/diagnose.md, "Input pipeline").
  const double loader_step_s = st.loader_s_per_micro_batch *
                               double(micro_batches > 0 ? micro_batches : c.num_micro_batches());
  const double loader_wait_s = std::max(0.0, loader_step_s - res.time_s);
  res.time_s += loader_wait_s;
  const std::vector<int>& replicas = plan->replicas;
  const RankCoord rc = layout.CoordOf(cfg.report_gpu);
  const bool simulated = std::count(replicas.begin(), replicas.end(), rc.dp) > 0;
  const int rep_dp = simulated ? rc.dp : plan->healthy_replica;
  const int rep_index = int(std::find(replicas.begin(), replicas.end(), rep_dp) - replicas.begin());
  res.report_gpu = cfg.report_gpu;
  res.report_gpu_place = layout.Describe(cfg.report_gpu);
  for (int s = 0; s < c.pp; ++s) {
    res.stage_breakdown.push_back(st.Breakdown(rep_index, s));
    res.stage_breakdown.back().input_stall_s += loader_wait_s;
  }
  res.breakdown = res.stage_breakdown[size_t(rc.pp)];
  FillMetrics(cfg, layout.num_gpus(), &res);

  res.simulated_replicas = int(replicas.size());
  res.simulation_note = plan->Describe(c.dp) + "; each stage's TP ranks run as one (the slowest)";
  if (loader_wait_s > 0) {
    res.simulation_note +=
        "; the data loader sets the step: " + FormatNumber("%.3f", loader_step_s) +
        " s to load its micro-batches, the GPUs' work done in " +
        FormatNumber("%.3f", res.time_s - loader_wait_s) +
        " s from a full prefetch queue (the rest is input stall)";
  }
  res.closed_form_collectives = sync.closed_form_collectives();
  res.closed_form_max_nodes = sync.closed_form_max_nodes();
  if (res.closed_form_collectives > 0) {
    res.simulation_note += "; data-parallel collectives over up to " +
                           std::to_string(res.closed_form_max_nodes) +
                           " nodes timed in closed form (groups over " +
                           std::to_string(cfg.flow_collective_max_nodes) +
                           " nodes do not run as flows, so they do not contend with pipeline "
                           "sends)";
  }
  res.events = st.engine.events_processed();
  res.flows = st.net.flows_started();
  if (options.record_trace) {
    // The wait the loader adds at the step's end, as the other input stalls are drawn.
    if (loader_wait_s > 0) {
      for (const Executor& e : st.execs) {
        st.trace.Slice(e.gpu, 0, "input stall", "input", res.time_s - loader_wait_s, loader_wait_s);
      }
    }
    st.trace.LinkCounters(*topo, st.net.LinkCapacities());
    res.trace = std::move(st.trace.slices());
    res.trace_extra = std::move(st.trace.extra());
    for (const Executor& e : st.execs) {
      res.trace_extra.gpus.push_back({e.gpu, replicas[size_t(e.replica)], e.stage});
    }
  }
  res.calibration = DescribeCalibration(cfg, tp);
  res.loader_s_per_micro_batch = st.loader_s_per_micro_batch;
  res.loader_queued = st.loader_queued;
  res.loader_replicas = st.loader_replicas;
  return res;
}

// Steady-state extrapolation (docs/step-simulation.md, "Many micro-batches"). Past the
// schedule's warm-up, and past the transient a slower stage's back-pressure sets off, every
// further group of `period` micro-batches repeats the same tasks, sends and reductions, so the
// step and each part of its breakdown grow by the same amount per group. Shorter steps of m1,
// m1 + period, m1 + 2 · period, ... micro-batches are simulated until one's events are the one
// before's with its last whole group repeated (step/event_streams.h), or the last three agree on
// the increment and a check step of a quarter of m falls on their line; then every part is
// extended linearly to the step's m micro-batches. If that has not happened by the time they
// have cost half the whole step, or anything the extrapolation cannot carry is on, the step is
// simulated whole.
struct SteadyPlan {
  int64_t m = 0, m1 = 0, period = 0;
  int64_t budget = 0;  // micro-batches the short and check steps may simulate in all
  int64_t check = 0;   // micro-batches of the long step that must fall on the line
};

std::optional<SteadyPlan> PlanSteadyState(const StepConfig& cfg, const SimulateOptions& options) {
  const ParallelConfig& c = cfg.parallel;
  // Not with the trace (it shows every micro-batch), GPipe (its memory grows with m), or a data
  // loader that is charged (its prefetch queue can start to bind after any number of
  // micro-batches, beyond the short steps). ZeRO-2/3 reduce every micro-batch's gradients, and
  // each backward drains its own (GradientSync::DrainsEachBackward), so nothing queues from one
  // group to the next.
  if (!cfg.steady_state_extrapolation || options.record_trace ||
      c.schedule == PipelineSchedule::kGpipe || !std::isinf(LoaderSamplesPerSecond(cfg.input))) {
    return std::nullopt;
  }
  SteadyPlan p;
  p.m = c.num_micro_batches();
  // Megatron's interleaved schedule runs micro-batches in groups of pp (and requires m to be a
  // multiple of it); 1F1B repeats every micro-batch. Groups of pp serve both. The warm-up of
  // the interleaved schedule is (v - 1) · pp + 2 · (pp - 1) chunk passes on rank 0, under two
  // groups of micro-batches: three groups put m1 past it (two were tried: their pairs repeat
  // less often, and the steps that follow cost more than the group saved; bench/README.md).
  p.period = c.pp;
  p.m1 = 3 * int64_t(c.pp);
  // The short steps, and the check step (a quarter of m, rounded up to whole groups) where it is
  // needed, may simulate half the micro-batches: at least half the work is saved when they
  // agree, and at most 1.5x it spent when they do not.
  p.budget = p.m / 2;
  p.check = (p.m / 4 + p.period - 1) / p.period * p.period;
  // At least two short steps, to compare.
  if (2 * p.m1 + p.period > p.budget) return std::nullopt;
  return p;
}

// The fields of a breakdown, to extrapolate them alike.
constexpr double StepBreakdown::*kBreakdownFields[] = {
    &StepBreakdown::compute_s,         &StepBreakdown::exposed_tp_comm_s,
    &StepBreakdown::exposed_cp_comm_s, &StepBreakdown::exposed_ep_comm_s,
    &StepBreakdown::exposed_dp_comm_s, &StepBreakdown::pp_wait_s,
    &StepBreakdown::bubble_s,          &StepBreakdown::optimizer_s,
    &StepBreakdown::other_s,           &StepBreakdown::input_stall_s,
    &StepBreakdown::host_overhead_s,   &StepBreakdown::compute_slowed_s,
    &StepBreakdown::offload_wait_s,
};

// A quantity grows alike from a to b and from b to c, where c lies `q` times as many
// micro-batches after b as b after a (`span` of them): within a millionth of the growth plus
// 10 ns and 1 ns per micro-batch spanned (the engine's clock is 1 ns and each step rounds its
// durations to it: waits summed over hundreds of micro-batches drift by tens of ns).
bool SameIncrement(double a, double b, double c, double q, int64_t span) {
  const double expected = q * (b - a), seen = c - b;
  return std::abs(seen - expected) <=
         1e-6 * std::max(std::abs(seen), std::abs(expected)) + 1e-8 + 1e-9 * double(span);
}

// Three steps grow alike (the step time and every part of every stage), the third `q` times as
// far after the second as the second after the first, `span` micro-batches after it.
bool Steady(const StepResult& a, const StepResult& b, const StepResult& c, double q, int64_t span) {
  if (!SameIncrement(a.time_s, b.time_s, c.time_s, q, span)) return false;
  if (a.stage_breakdown.size() != c.stage_breakdown.size() ||
      b.stage_breakdown.size() != c.stage_breakdown.size()) {
    return false;
  }
  for (size_t s = 0; s < c.stage_breakdown.size(); ++s) {
    for (double StepBreakdown::*f : kBreakdownFields) {
      if (!SameIncrement(a.stage_breakdown[s].*f, b.stage_breakdown[s].*f, c.stage_breakdown[s].*f,
                         q, span)) {
        return false;
      }
    }
  }
  return true;
}

// The events of a step `more` micro-batches longer than the last short step, estimated from the
// last two (`r`, one group of `period` micro-batches apart; at least one event per group).
double EventsAfter(const std::vector<StepResult>& r, int64_t more, int64_t period) {
  const double events = double(r.back().events);
  const double per_group = std::max(1.0, events - double(r[r.size() - 2].events));
  return events + double(more) / double(period) * per_group;
}

// Whether simulating a step of `next` micro-batches keeps the events of the short steps (`spent`
// so far) within three quarters of those the whole step will run, estimated from the last two
// short steps (`r`, the last of `last` micro-batches): a step's fixed events (the gradient
// reduction, the optimizer, warm-up and cool-down) make short steps of few micro-batches cost
// more than their share, up to more than the whole step.
bool WithinBudget(const std::vector<StepResult>& r, uint64_t spent, int64_t last, int64_t next,
                  const SteadyPlan& p) {
  if (r.size() < 2) return true;
  return double(spent) + EventsAfter(r, next - last, p.period) <=
         0.75 * EventsAfter(r, p.m - last, p.period);
}

}  // namespace

Result<StepResult> SimulateStep(const StepConfig& cfg, const ClusterState& state,
                                const SimulateOptions& options) {
  const std::optional<SteadyPlan> plan = PlanSteadyState(cfg, options);
  if (!plan.has_value()) return SimulateStepOnce(cfg, state, options);
  // The last three short steps, oldest first; the last two ones' event times, to compare the
  // next with; once found, the period of the repeating state in groups (1, or 2 where the
  // groups alternate).
  std::vector<StepResult> r;
  std::vector<EventStream> times;
  int repeat_groups = 0;
  uint64_t events = 0, flows = 0;
  int64_t simulated = 0;
  int64_t last = 0;  // micro-batches of r.back()
  for (int64_t m = plan->m1;; m += plan->period) {
    if (simulated + m > plan->budget || !WithinBudget(r, events, last, m, *plan)) {
      times = {};
      return SimulateStepOnce(cfg, state, options);
    }
    // Checked as the whole step (layout, memory, length): its errors are the step's.
    EventStream t;
    if (r.size() >= 2) {
      // Room for one group more than the last step, so that it is not grown by doubling.
      const double next = EventsAfter(r, plan->period, plan->period);
      const size_t room = size_t(next + next / 64 + 1024);
      t.times.reserve(room);
      t.kinds.reserve(room);
    }
    Result<StepResult> one = SimulateStepOnce(cfg, state, options, m, &t);
    if (!one.ok()) return one.status();
    simulated += m;
    last = m;
    events += one->events;
    flows += one->flows;
    if (r.size() == 3) r.erase(r.begin());
    r.push_back(std::move(*one));
    // Agreeing short steps can sit in a slow transient (uneven stages drift for ~150
    // micro-batches before a pipeline wait binds), so the events decide: where this step's are
    // the one before's with its last whole group repeated (two consecutive groups and the
    // endings the same to the nanosecond: evidence, not proof, that the state repeats), the
    // step is extended from these two. Where the groups alternate (two kinds, as a pipeline of
    // 4 stages with 12 chunks each and CP 16 runs), the step two groups shorter must be this
    // one with its last two groups repeated, and m must lie a whole number of pairs of groups
    // past this step, so that its ending is in the same phase.
    if (!times.empty() && CompareGroupRepeated(times.back(), t).inserted) {
      repeat_groups = 1;
    } else if (times.size() == 2 && (plan->m - m) % (2 * plan->period) == 0 &&
               CompareGroupRepeated(times.front(), t).inserted) {
      repeat_groups = 2;
    }
    if (times.size() == 2) times.erase(times.begin());
    times.push_back(std::move(t));
    if (repeat_groups > 0) break;
    // Otherwise a step of a quarter of m must fall on the line of three that agree.
    if (r.size() == 3 && Steady(r[0], r[1], r[2], 1, plan->period)) break;
  }
  times = {};
  std::string simulated_steps = std::to_string(plan->m1) + " to " + std::to_string(last);
  StepResult res;
  StepResult before;
  int64_t from = last, span = plan->period * repeat_groups;
  if (repeat_groups > 0) {
    before = std::move(r[r.size() - 1 - size_t(repeat_groups)]);
    res = std::move(r.back());
  } else {
    if (simulated + plan->check > plan->budget ||
        !WithinBudget(r, events, last, plan->check, *plan)) {
      return SimulateStepOnce(cfg, state, options);
    }
    Result<StepResult> check = SimulateStepOnce(cfg, state, options, plan->check);
    if (!check.ok()) return check.status();
    events += check->events;
    flows += check->flows;
    const double q = double(plan->check - last) / double(plan->period);
    if (!Steady(r[1], r[2], *check, q, plan->check - last)) {
      return SimulateStepOnce(cfg, state, options);
    }
    before = std::move(r[2]);
    res = std::move(*check);
    from = plan->check;
    span = plan->check - last;
    simulated_steps += " and " + std::to_string(plan->check);
  }
  // x(m) = x(from) + (m - from) · (x(from) - x(from - span)) / span.
  const double k = double(plan->m - from) / double(span);
  const auto extend = [k](double prev, double now) { return now + k * (now - prev); };
  res.time_s = extend(before.time_s, res.time_s);
  for (size_t s = 0; s < res.stage_breakdown.size(); ++s) {
    for (double StepBreakdown::*f : kBreakdownFields) {
      res.stage_breakdown[s].*f = extend(before.stage_breakdown[s].*f, res.stage_breakdown[s].*f);
    }
  }
  for (double StepBreakdown::*f : kBreakdownFields) {
    res.breakdown.*f = extend(before.breakdown.*f, res.breakdown.*f);
  }
  FillMetrics(cfg, cfg.parallel.num_gpus(), &res);
  res.events = events;
  res.flows = flows;
  res.simulation_note += "; steps of " + simulated_steps + " micro-batches simulated, the step's " +
                         std::to_string(plan->m) + " extended from their steady state" +
                         (repeat_groups == 1   ? " (each group's events repeating)"
                          : repeat_groups == 2 ? " (each pair of groups' events repeating)"
                                               : "") +
                         " (docs/step-simulation.md)";
  return res;
}

}  // namespace trainsim::step
