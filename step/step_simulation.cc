// The step simulation's driver: validate → plan replicas → pass costs → run → assemble result.
// The parts: pass_costs (what a pass and a step's traffic cost), replica_plan (which replicas
// differ), pipeline (the executors), gradient_sync (DP reduction, optimizer, ZeRO gathers),
// step_trace (the Chrome trace). docs/step-simulation.md explains the model.
#include "step/step_simulation.h"

#include <algorithm>
#include <string>

#include "step/gradient_sync.h"
#include "step/pass_costs.h"
#include "step/pipeline.h"
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
  const ParallelConfig& c = cfg.parallel;
  u.used = true;
  u.file = cfg.calibration->path();
  u.gpu = cfg.calibration->gpu_name();
  u.sample = cfg.calibration->is_sample();
  const GemmCalibration cal = GemmCalibrationOf(cfg);
  const GemmCoverage g =
      CountCalibratedGemms(cfg.gpu, &cal, LayerOps(cfg.model, c.split(), c.micro_batch));
  u.gemm_shapes = g.shapes;
  u.gemm_shapes_calibrated = g.calibrated;
  for (const auto& [name, calibrated] : tp.use()) {
    (calibrated ? u.collectives_calibrated : u.collectives_modelled).push_back(name);
  }
  return u;
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
  const GroupTimers timers{&tp, c.cp > 1 ? &cp : nullptr, c.ep > 1 ? &ep : nullptr,
                           c.etp > 1 ? &etp : nullptr};
  Result<std::vector<ChunkCost>> costs = ChunkCosts(cfg, GemmCalibrationOf(cfg), timers);
  if (!costs.ok()) return costs.status();
  TRAINSIM_RETURN_IF_ERROR(CheckStepLength(c, *costs, plan->max_slowdown()));

  StepState st(cfg, &*topo, &layout, plan->replicas, plan->slowdown, options);
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
  const std::vector<int>& replicas = plan->replicas;
  const RankCoord rc = layout.CoordOf(cfg.report_gpu);
  const bool simulated = std::count(replicas.begin(), replicas.end(), rc.dp) > 0;
  const int rep_dp = simulated ? rc.dp : plan->healthy_replica;
  const int rep_index = int(std::find(replicas.begin(), replicas.end(), rep_dp) - replicas.begin());
  res.report_gpu = cfg.report_gpu;
  res.report_gpu_place = layout.Describe(cfg.report_gpu);
  for (int s = 0; s < c.pp; ++s) res.stage_breakdown.push_back(st.Breakdown(rep_index, s));
  res.breakdown = res.stage_breakdown[size_t(rc.pp)];
  FillMetrics(cfg, layout.num_gpus(), &res);

  res.simulated_replicas = int(replicas.size());
  res.simulation_note = plan->Describe(c.dp) + "; each stage's TP ranks run as one (the slowest)";
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

}  // namespace trainsim::step
