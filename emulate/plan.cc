// emulate/plan.cc — a scenario scaled to an emulation (MakePlan) and the run simulation's
// prediction of the measured emulation (Predict).
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cmath>

#include "checkpoint/failure_model.h"
#include "emulate/emulate.h"
#include "emulate/protocol.h"
#include "run/run_simulation.h"
#include "scenarios/run_config.h"
#include "scenarios/session.h"
#include "sim/random.h"

namespace trainsim::emulate {

uint64_t ScenarioHash(const scenarios::ResolvedScenario& resolved) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);  // same scenario, same bytes, same hash
    resolved.scenario.SerializeToCodedStream(&coded);
  }
  return Fnv1a64(bytes.data(), bytes.size());
}

namespace {
double Scaled(sim::Time t, double scale) { return t.seconds() / scale; }

// The failure model's arrivals before the scaled run's end (scenario time end_s * scale), drawn
// by checkpoint::FailureProcess on the stream the run simulation's first trial uses, so
// `trainsim run` of the same scenario sees the same history. A cause becomes the fault kind
// that its mechanism injects: silent -> SDC, PROCESS_EXIT -> GPU (needs replacement) or
// SOFTWARE, HEARTBEAT -> NODE, COLLECTIVE_TIMEOUT -> HANG; NCCL_ERROR causes (a NIC or cable
// down) cannot be emulated and are listed in the notes.
Status DrawFailures(EmulationPlan& p, double end_s,
                    std::vector<std::pair<run::ScheduledFault, bool>>* out) {
  TRAINSIM_RETURN_IF_ERROR(p.run.failures.Validate());
  checkpoint::FailureProcess process(p.run.failures, p.run.nodes,
                                     sim::RandomStreams(p.run.seed).Stream("trial/0/failures"));
  using K = run::ScheduledFault::Kind;
  using M = checkpoint::DetectionMechanism;
  int drawn = 0;
  for (;;) {
    const checkpoint::FailureProcess::Arrival a = process.Next();
    if (a.at.is_max() || a.at.seconds() / p.time_scale >= end_s) break;
    const checkpoint::FailureCause& cause = process.causes()[a.cause];
    run::ScheduledFault f;
    f.at = a.at;
    f.id = a.node * p.run.gpus_per_node;  // the node's first GPU
    if (cause.silent) {
      f.kind = K::kSdc;
    } else if (cause.detection == M::kProcessExit) {
      f.kind = cause.needs_replacement ? K::kGpu : K::kSoftwareHang;
    } else if (cause.detection == M::kHeartbeat) {
      f.kind = K::kNode;
      f.id = a.node;
    } else if (cause.detection == M::kCollectiveTimeout) {
      f.kind = K::kHang;
    } else {
      p.notes.push_back("failures: " + cause.name + " on node " + std::to_string(a.node) + " at " +
                        sim::FormatDuration(a.at) +
                        " not injected (a NIC or cable down cannot be emulated)");
      continue;
    }
    ++drawn;
    out->push_back({f, true});
  }
  p.notes.push_back("failures: " + std::to_string(drawn) +
                    " failure(s) drawn from the failure model (seed " + std::to_string(p.run.seed) +
                    ") within the scaled run");
  return Status::Ok();
}
}  // namespace

Result<EmulationPlan> MakePlan(const scenarios::ResolvedScenario& resolved,
                               const EmulateOptions& o) {
  EmulationPlan p;
  Result<run::RunConfig> rc = scenarios::MakeRunConfig(resolved);
  if (!rc.ok()) return rc.status();
  p.run = *rc;
  Result<scenarios::StepOutcome> step =
      scenarios::SimulateScenarioStep(resolved, scenarios::StepRequest{});
  if (!step.ok()) return step.status();
  p.scenario_step_s = step->result.time_s;
  if (!(p.scenario_step_s > 0)) return Status::InvalidArgument("the scenario's step takes no time");
  p.workers = o.workers > 0 ? o.workers : std::min(8, resolved.nodes);
  if (p.workers < 2 || p.workers > 64) {
    return Status::InvalidArgument("--workers " + std::to_string(p.workers) +
                                   ": an emulation needs 2 to 64 workers");
  }
  if (o.time_scale < 0 || o.duration_s < 0 || o.steps < 0 || o.state_bytes < 0) {
    return Status::InvalidArgument(
        "--time-scale, --duration, --steps and --state-bytes must be "
        "positive");
  }
  p.time_scale = o.time_scale > 0 ? o.time_scale : p.scenario_step_s / kDefaultStepWallS;
  p.compute_s = p.scenario_step_s / p.time_scale;
  if (o.steps > 0) {
    p.steps = o.steps;
  } else if (o.duration_s > 0) {
    p.steps = std::max<int64_t>(1, static_cast<int64_t>(o.duration_s / p.compute_s));
  } else {
    p.steps =
        std::min<int64_t>(p.run.total_steps > 0 ? p.run.total_steps : kDefaultSteps, kDefaultSteps);
  }
  const int64_t bytes = o.state_bytes > 0 ? o.state_bytes : kDefaultStateBytes;
  if (bytes > (int64_t{256} << 20)) {
    return Status::InvalidArgument("--state-bytes " + std::to_string(bytes) +
                                   ": at most 268435456 (256 MiB) per worker");
  }
  p.elements = std::max<int64_t>(bytes / 8, p.workers);
  p.seed = p.run.seed;
  p.scenario_hash = ScenarioHash(resolved);

  // Checkpoints: the scenario's interval in steps of the scaled run.
  const auto& ck = p.run.checkpoint;
  using IK = checkpoint::CheckpointInterval::Kind;
  if (!resolved.scenario.checkpoint().enabled() || ck.interval.kind == IK::kNever) {
    p.checkpoint_every = 0;
  } else if (ck.interval.kind == IK::kSteps) {
    p.checkpoint_every = ck.interval.steps;
  } else if (ck.interval.kind == IK::kTrainingTime) {
    p.checkpoint_every =
        std::max<int64_t>(1, std::llround(ck.interval.every.seconds() / p.scenario_step_s));
  } else {
    return Status::InvalidArgument(
        "checkpoint.interval \"auto\": the emulation needs a fixed interval (\"steps:N\" or a "
        "duration); set it with --set checkpoint.interval=steps:50");
  }
  p.policy = ck.policy;
  p.persistent_every = std::max(1, ck.persistent_every);
  p.keep_last = std::max(0, ck.keep_last);
  p.algorithm = o.algorithm;
  const auto& rec = p.run.recovery;
  p.recovery = rec.policy;
  p.min_dp = std::max(1, rec.min_dp);
  using M = checkpoint::DetectionMechanism;
  p.process_exit_s = Scaled(rec.DelayFor(M::kProcessExit), p.time_scale);
  p.heartbeat_s = Scaled(rec.DelayFor(M::kHeartbeat), p.time_scale);
  p.collective_timeout_s = Scaled(rec.DelayFor(M::kCollectiveTimeout), p.time_scale);
  p.requeue_s = Scaled(rec.scheduler_requeue, p.time_scale);
  p.repair_s = Scaled(rec.scheduled_repair_time, p.time_scale);
  p.loss_check_s = Scaled(rec.DelayFor(M::kLossCheck), p.time_scale);
  // Timers below a millisecond would measure the scheduler, not the mechanism.
  for (double* d : {&p.process_exit_s, &p.heartbeat_s, &p.collective_timeout_s}) {
    if (*d < 0.005) {
      return Status::InvalidArgument(
          "recovery.detect: a detection delay scales to under 5 ms at --time-scale " +
          std::to_string(p.time_scale) + "; lower the time scale or lengthen the delay");
    }
  }
  const double end_s = static_cast<double>(p.steps) * p.compute_s;
  using K = run::ScheduledFault::Kind;
  std::vector<std::pair<run::ScheduledFault, bool>> listed;  // (fault, drawn from the model)
  for (const run::ScheduledFault& f : p.run.faults) listed.push_back({f, false});
  if (p.run.failures.enabled) {
    TRAINSIM_RETURN_IF_ERROR(DrawFailures(p, end_s, &listed));
  }
  for (const auto& [f, drawn] : listed) {
    PlannedFault pf;
    pf.fault = f;
    pf.drawn = drawn;
    switch (f.kind) {
      case K::kGpu:
      case K::kSdc:
      case K::kStraggler:
      case K::kHang:
        pf.rank = (f.id / p.run.gpus_per_node) % p.workers;
        break;
      case K::kNode:
        pf.rank = f.id % p.workers;
        break;
      case K::kLinkDegraded:
        pf.rank = (f.id / p.run.nics_per_node) % p.workers;
        break;
      case K::kSoftwareHang:
        pf.rank = 0;
        break;
      default:
        return Status::InvalidArgument(std::string("faults: ") + f.KindName() +
                                       " faults cannot be emulated (GPU, NODE, HANG, SOFTWARE, "
                                       "SDC, STRAGGLER and a degraded LINK can)");
    }
    pf.at_s = Scaled(f.at, p.time_scale);
    pf.duration_s = Scaled(f.duration, p.time_scale);
    pf.mechanism = rec.MechanismFor(f.NaturalDetection());
    pf.bound_s = Scaled(rec.DelayFor(f.NaturalDetection()), p.time_scale);
    if (pf.at_s >= end_s) {
      p.notes.push_back(f.Describe() + ": after the scaled run's end, not injected");
      continue;
    }
    p.faults.push_back(pf);
  }
  for (const PlannedFault& f : p.faults) {
    if (f.fault.kind == K::kSdc) {
      // The loss check runs every loss_check of (scaled) training time: every
      // floor(loss_check / step) steps, at least every step.
      p.check_every = std::max<int64_t>(1, static_cast<int64_t>(p.loss_check_s / p.compute_s));
    }
  }
  return p;
}

void Predict(EmulationResult* r) {
  const EmulationPlan& p = r->plan;
  run::RunConfig c = p.run;
  // The scaled job: one node of one GPU per worker, the measured costs, the injected faults.
  c.nodes = p.workers;
  c.gpus_per_node = 1;
  c.nics_per_node = 1;
  c.tp = c.pp = 1;
  c.dp = p.workers;
  c.cluster_nodes = 0;
  c.total_steps = p.steps - r->start_step;
  c.wall_time_limit.reset();
  c.failures.enabled = false;
  c.spare_nodes = static_cast<int>(r->faults.size()) + 1;
  c.faults.clear();
  for (const MeasuredFault& f : r->faults) {
    run::ScheduledFault s = f.planned.fault;
    s.id = f.planned.rank;
    s.at = sim::Time::FromSeconds(f.injected_at_s);
    s.duration = sim::Time::FromSeconds(f.planned.duration_s);
    c.faults.push_back(s);
  }
  auto& rec = c.recovery;
  const double scale = p.time_scale;
  rec.detect.process_exit = sim::Time::FromSeconds(p.process_exit_s);
  rec.detect.heartbeat = sim::Time::FromSeconds(p.heartbeat_s);
  rec.detect.collective_timeout = sim::Time::FromSeconds(p.collective_timeout_s);
  rec.detect.nccl_error = sim::Time::FromSeconds(rec.detect.nccl_error.seconds() / scale);
  rec.detect.loss_check = sim::Time::FromSeconds(rec.detect.loss_check.seconds() / scale);
  rec.detection_delay = sim::Time::FromSeconds(rec.detection_delay.seconds() / scale);
  rec.scheduler_requeue = sim::Time::FromSeconds(p.requeue_s);
  // Process start and rendezvous as measured: the restart minus the requeue and the load.
  // The mean restart excludes the repair waits (the model adds the scaled repair time itself).
  double restart = 0;
  int restarts = 0;
  for (const MeasuredFault& f : r->faults) {
    if (f.restart_s <= 0) continue;
    restart += f.restart_s - f.waited_s;
    ++restarts;
  }
  restart = restarts ? restart / restarts : 0;
  rec.process_start = sim::Time::FromSeconds(std::max(0.0, restart - p.requeue_s - r->restore_s));
  rec.comm_init_base = sim::Time();
  rec.comm_init_per_gpu = sim::Time();
  // WAIT_FOR_REPAIR waits the scaled repair time; the emulation never brings a repaired node
  // back otherwise (an ELASTIC job stays shrunk), so the model's repairs are put out of reach.
  rec.scheduled_repair_time = p.recovery == checkpoint::RecoveryPolicy::kWaitForRepair
                                  ? sim::Time::FromSeconds(p.repair_s)
                                  : sim::Time::Hours(1e3);
  rec.min_dp = p.min_dp;
  // Checkpoints: every checkpoint_every steps, costs as measured (storage bandwidths set so the
  // model's write, snapshot and load take the measured seconds).
  auto& ck = c.checkpoint;
  ck.policy = p.policy;
  ck.interval.kind = p.checkpoint_every > 0 ? checkpoint::CheckpointInterval::Kind::kSteps
                                            : checkpoint::CheckpointInterval::Kind::kNever;
  ck.interval.steps = p.checkpoint_every;
  ck.keep_last = p.keep_last;
  ck.persistent_every = p.persistent_every;
  const double size = static_cast<double>(p.elements) * 8;
  ck.spec.parameters = p.elements * 8;
  ck.spec.bytes_per_param = 1;
  ck.spec.writer_nodes = 0;
  ck.hardware.node_net_GBps = 1e9;
  if (p.policy == checkpoint::CheckpointPolicy::kInMemory && r->peer_copy_s > 0) {
    // The node bandwidth at which the model's peer copy of one shard takes the measured time.
    ck.hardware.node_net_GBps =
        size / p.workers / (r->peer_copy_s * ck.hardware.peer_copy_share) / 1e9;
  }
  const double write_s =
      std::max(1e-6, p.policy == checkpoint::CheckpointPolicy::kSync ? r->checkpoint_stall_s
                                                                     : r->checkpoint_write_s);
  ck.hardware.storage_write_GBps = size / write_s / 1e9;
  ck.hardware.storage_read_GBps = size / std::max(1e-6, r->restore_s) / 1e9;
  ck.hardware.host_copy_GBps_per_gpu =
      size / p.workers / std::max(1e-6, r->checkpoint_stall_s) / 1e9;
  c.max_wall_time = sim::Time::Days(1);
  const double compute = r->compute_s > 0 ? r->compute_s : p.compute_s;
  const double comm = r->comm_s;
  run::StepTimeCache cache([compute, comm](const run::RunState& s) -> Result<run::StepTiming> {
    double slow = 1, link = 1;
    for (const auto& [gpu, f] : s.gpu_slowdown) slow = std::max(slow, f);
    for (const auto& [nic, f] : s.nic_link_factor) link = std::min(link, f);
    run::StepTiming t;
    t.useful = sim::Time::FromSeconds(compute * slow);
    t.exposed_comm = sim::Time::FromSeconds(comm / link);
    return t;
  });
  Result<run::RunReport> rep = run::SimulateRun(c, cache);
  if (!rep.ok()) {
    r->predicted_ok = false;
    r->prediction_error = rep.status().message();
    return;
  }
  r->predicted = *rep;
  r->predicted_ok = true;
}

}  // namespace trainsim::emulate
