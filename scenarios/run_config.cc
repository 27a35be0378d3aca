#include "scenarios/run_config.h"

// Mapping (what is not obvious):
//   - training.duration is wall time the job holds its GPUs → RunConfig::wall_time_limit;
//     tokens or steps → total_steps.
//   - checkpoint.enabled = false → interval `never` (a failure restarts from step 0).
//   - Checkpoint traffic goes over the compute NICs: node bandwidth = nics_per_node × NIC rate;
//     GPU→host copies at the catalogue's PCIe bandwidth.
//   - A LINK fault with degrade = 1 (down) takes its node out like a NIC failure; degrade < 1
//     runs that NIC's link at 1 − degrade of its bandwidth for `duration`.
//   - HANG and SOFTWARE restart in place; GPU, NODE, NIC, SDC need a replacement node.
//   - Detection: per mechanism (recovery.detect, defaults in checkpoint::DetectionDelays) by the
//     fault's kind; recovery.detection_delay, when set, is a uniform override for every fault.
//   - Stochastic causes: scenario `causes` (fraction → weight, kind → category) or, when empty,
//     checkpoint::DefaultFailureCauses(); every hardware cause repairs in recovery.repair_time.
//
// Step time per cluster state (MakeStepTimeFn): slowed GPUs and degraded NIC links go to the
// step simulation as they are. Fewer live DP replicas (ELASTIC): the layout shrinks to the live
// replicas on correspondingly fewer nodes, keeping the global batch (the survivors take the lost
// replicas' micro-batches, rounded up to whole micro-batches per replica); slowdowns and links
// on GPUs/NICs beyond the shrunk job are dropped (an approximation). Background checkpoint
// traffic sharing a fraction s of each node's network: the step's network-exposed time (DP
// communication and pipeline waits) is stretched by 1 / (1 − s), s capped at 0.9 — a
// first-order model, since simulating the reduced NIC bandwidth would make the step simulation
// expand every replica. Categories: useful = compute + optimizer; exposed communication = TP +
// DP exposed + pipeline waits; bubble = bubble + other.

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "comm/topology.h"
#include "scenarios/catalogue.h"
#include "scenarios/internal.h"

namespace trainsim::scenarios {
namespace {

namespace ck = trainsim::checkpoint;
namespace rn = trainsim::run;

Result<sim::Time> Duration(const std::string& text, const char* field) {
  Result<sim::Time> t = sim::ParseDuration(text);
  if (!t.ok()) return t.status().WithPrefix(field);
  return t;
}

const char* CategoryOf(pb::Fault::Kind kind) {
  switch (kind) {
    case pb::Fault::GPU:
    case pb::Fault::STRAGGLER:
    case pb::Fault::SDC:
      return "GPU";
    case pb::Fault::NIC:
    case pb::Fault::LINK:
      return "network";
    case pb::Fault::NODE:
      return "host";
    default:
      return "software";
  }
}

ck::DetectionMechanism MechanismOf(pb::Recovery::Detection d) {
  switch (d) {
    case pb::Recovery::HEARTBEAT:
      return ck::DetectionMechanism::kHeartbeat;
    case pb::Recovery::PROCESS_EXIT:
      return ck::DetectionMechanism::kProcessExit;
    case pb::Recovery::NCCL_ERROR:
      return ck::DetectionMechanism::kNcclError;
    case pb::Recovery::LOSS_CHECK:
      return ck::DetectionMechanism::kLossCheck;
    default:
      return ck::DetectionMechanism::kCollectiveTimeout;
  }
}

// How a stochastic cause of this kind is detected (the same as a scheduled fault of the kind).
ck::DetectionMechanism MechanismOfKind(pb::Fault::Kind kind) {
  switch (kind) {
    case pb::Fault::NODE:
      return ck::DetectionMechanism::kHeartbeat;
    case pb::Fault::NIC:
    case pb::Fault::LINK:
      return ck::DetectionMechanism::kNcclError;
    case pb::Fault::HANG:
      return ck::DetectionMechanism::kCollectiveTimeout;
    case pb::Fault::SDC:
      return ck::DetectionMechanism::kLossCheck;
    default:
      return ck::DetectionMechanism::kProcessExit;  // GPU (Xid crash) and SOFTWARE
  }
}

sim::Time Seconds(double s) {
  return sim::Time::FromSecondsChecked(std::max(0.0, s)).value_or(sim::Time::Max());
}

}  // namespace

rn::StepTiming ToStepTiming(const step::StepBreakdown& b) {
  rn::StepTiming t;
  t.useful = Seconds(b.compute_s + b.optimizer_s);
  // Compute slowed by overlapped collectives is time the communication costs.
  t.exposed_comm = Seconds(b.exposed_tp_comm_s + b.exposed_cp_comm_s + b.exposed_ep_comm_s +
                           b.exposed_dp_comm_s + b.pp_wait_s + b.compute_slowed_s);
  // The GPUs idle waiting for the data loader, the host or activation offloading's copies count
  // with the bubble (the run report's idle share); without them the run would use a step
  // shorter than simulated.
  t.bubble =
      Seconds(b.bubble_s + b.other_s + b.input_stall_s + b.host_overhead_s + b.offload_wait_s);
  return t;
}

Result<rn::ScheduledFault> MakeScheduledFault(const ResolvedFault& rf) {
  rn::ScheduledFault f;
  f.id = rf.fault.id();
  f.at = rf.at;
  f.duration = rf.duration.value_or(sim::Time());
  switch (rf.fault.kind()) {
    case pb::Fault::GPU:
      f.kind = rn::ScheduledFault::Kind::kGpu;
      break;
    case pb::Fault::NODE:
      f.kind = rn::ScheduledFault::Kind::kNode;
      break;
    case pb::Fault::NIC:
      f.kind = rn::ScheduledFault::Kind::kNic;
      break;
    case pb::Fault::LINK: {
      const double degrade = rf.fault.has_degrade() ? rf.fault.degrade() : 1.0;
      if (degrade >= 1.0) {
        f.kind = rn::ScheduledFault::Kind::kLinkDown;  // down: its node leaves the job
      } else {
        f.kind = rn::ScheduledFault::Kind::kLinkDegraded;
        f.factor = 1.0 - degrade;
      }
      break;
    }
    case pb::Fault::STRAGGLER:
      f.kind = rn::ScheduledFault::Kind::kStraggler;
      f.factor = rf.fault.has_slowdown() ? rf.fault.slowdown() : 2.0;
      break;
    case pb::Fault::HANG:
      f.kind = rn::ScheduledFault::Kind::kHang;
      break;
    case pb::Fault::SOFTWARE:
      f.kind = rn::ScheduledFault::Kind::kSoftwareHang;
      f.id = 0;
      break;
    case pb::Fault::SDC:
      f.kind = rn::ScheduledFault::Kind::kSdc;
      break;
    default:
      return Status::InvalidArgument(
          "faults: a fault needs a kind (gpu, node, nic, link, "
          "straggler, hang, software)");
  }
  return f;
}

Result<rn::RunConfig> MakeRunConfig(const ResolvedScenario& r) {
  const pb::Scenario& s = r.scenario;
  rn::RunConfig c;
  if (r.total_steps) {
    c.total_steps = *r.total_steps;
  } else if (r.training_duration) {
    c.wall_time_limit = *r.training_duration;
  } else {
    return Status::InvalidArgument(
        "training: set one of training.tokens, training.steps or training.duration");
  }
  c.nodes = r.nodes;
  c.gpus_per_node = r.gpus_per_node;
  // A data-parallel replica is tp × cp × pp GPUs (context-parallel ranks of a replica share
  // its weights and fail with it): the run simulation's "tp" is the GPUs of one stage of it.
  c.tp = r.tp * r.scenario.parallelism().cp();
  c.pp = r.pp;
  c.dp = r.dp;
  c.nics_per_node = r.nics_per_node;
  c.spare_nodes = r.spare_nodes;

  // Checkpoints.
  const pb::Checkpoint& cp = s.checkpoint();
  switch (cp.policy()) {
    case pb::Checkpoint::ASYNC:
      c.checkpoint.policy = ck::CheckpointPolicy::kAsync;
      break;
    case pb::Checkpoint::IN_MEMORY:
      c.checkpoint.policy = ck::CheckpointPolicy::kInMemory;
      break;
    default:
      c.checkpoint.policy = ck::CheckpointPolicy::kSync;
  }
  if (cp.has_enabled() && !cp.enabled()) {
    c.checkpoint.interval.kind = ck::CheckpointInterval::Kind::kNever;
  } else {
    c.checkpoint.interval = r.checkpoint_interval;
  }
  if (cp.has_persistent_every()) c.checkpoint.persistent_every = cp.persistent_every();
  if (cp.has_keep_last()) c.checkpoint.keep_last = cp.keep_last();
  c.checkpoint.spec.parameters = r.params;
  if (cp.has_bytes_per_param()) c.checkpoint.spec.bytes_per_param = cp.bytes_per_param();
  ck::CheckpointHardware& hw = c.checkpoint.hardware;
  if (r.nic.gbit_per_s() > 0) hw.node_net_GBps = r.nics_per_node * r.nic.gbit_per_s() / 8.0;
  // A snapshot copies each GPU's shard to host memory: over NVLink-C2C on Grace superchips, else
  // PCIe, at the GPU's device-to-host copy efficiency.
  if (const double d2h = HostCopyGBps(r.gpu, /*to_host=*/true); d2h > 0) {
    hw.host_copy_GBps_per_gpu = d2h;
  }
  const pb::Storage& st = s.cluster().storage();
  if (st.has_write_gbyte_per_s()) hw.storage_write_GBps = st.write_gbyte_per_s();
  if (st.has_read_gbyte_per_s()) hw.storage_read_GBps = st.read_gbyte_per_s();

  // Recovery.
  const pb::Recovery& rc = s.recovery();
  switch (rc.policy()) {
    case pb::Recovery::WAIT_FOR_REPAIR:
      c.recovery.policy = ck::RecoveryPolicy::kWaitForRepair;
      break;
    case pb::Recovery::ELASTIC:
      c.recovery.policy = ck::RecoveryPolicy::kElastic;
      break;
    default:
      c.recovery.policy = ck::RecoveryPolicy::kRestartOnSpare;
  }
  if (!rc.detection_delay().empty()) {
    // Legacy uniform detection: every fault after the same delay.
    c.recovery.uniform_detection = true;
    c.recovery.detection = MechanismOf(rc.detection());
    c.recovery.detection_delay = r.detection_delay;
  }
  const pb::Recovery::Detect& d = rc.detect();
  for (const auto& [text, field, out] :
       {std::tuple{&d.process_exit(), "recovery.detect.process_exit",
                   &c.recovery.detect.process_exit},
        std::tuple{&d.nccl_error(), "recovery.detect.nccl_error", &c.recovery.detect.nccl_error},
        std::tuple{&d.heartbeat(), "recovery.detect.heartbeat", &c.recovery.detect.heartbeat},
        std::tuple{&d.collective_timeout(), "recovery.detect.collective_timeout",
                   &c.recovery.detect.collective_timeout},
        std::tuple{&d.loss_check(), "recovery.detect.loss_check", &c.recovery.detect.loss_check}}) {
    if (text->empty()) continue;
    Result<sim::Time> t = Duration(*text, field);
    if (!t.ok()) return t.status();
    *out = t.value();
  }
  const pb::Recovery::Straggler& sp = rc.straggler();
  if (sp.has_threshold()) c.recovery.straggler.threshold = sp.threshold();
  if (!sp.detect_after().empty()) {
    Result<sim::Time> t = Duration(sp.detect_after(), "recovery.straggler.detect_after");
    if (!t.ok()) return t.status();
    c.recovery.straggler.detect_after = t.value();
  }
  if (sp.action() == pb::Recovery::Straggler::EVICT) {
    c.recovery.straggler.action = ck::StragglerAction::kEvict;
  }
  c.recovery.scheduler_requeue = r.requeue;
  c.recovery.process_start = r.process_start;
  if (!rc.comm_init_base().empty()) {
    Result<sim::Time> base = Duration(rc.comm_init_base(), "recovery.comm_init_base");
    if (!base.ok()) return base.status();
    c.recovery.comm_init_base = base.value();
  }
  if (!rc.comm_init_per_1k_gpus().empty()) {
    Result<sim::Time> per_1k =
        Duration(rc.comm_init_per_1k_gpus(), "recovery.comm_init_per_1k_gpus");
    if (!per_1k.ok()) return per_1k.status();
    c.recovery.comm_init_per_gpu = sim::Time::Nanos(per_1k->nanos() / 1000);
  }
  c.recovery.scheduled_repair_time = r.repair_time;
  if (rc.has_min_dp()) c.recovery.min_dp = rc.min_dp();

  // The stochastic failure model.
  const pb::Failures& fm = s.failures();
  c.failures.enabled = !fm.has_enabled() || fm.enabled();
  if (fm.has_node_day_rate()) c.failures.node_day_rate = fm.node_day_rate();
  c.failures.distribution = fm.distribution() == pb::Failures::WEIBULL
                                ? ck::FailureDistribution::kWeibull
                                : ck::FailureDistribution::kExponential;
  if (fm.has_weibull_shape()) c.failures.weibull_shape = fm.weibull_shape();
  if (fm.causes().empty()) {
    c.failures.causes = ck::DefaultFailureCauses();
  } else {
    for (const pb::FailureCause& pc : fm.causes()) {
      ck::FailureCause cause;
      cause.name = pc.name();
      cause.category = CategoryOf(pc.kind());
      cause.weight = pc.fraction();
      cause.needs_replacement = pc.needs_replacement();
      cause.detection = MechanismOfKind(pc.kind());
      cause.silent = pc.kind() == pb::Fault::SDC;
      c.failures.causes.push_back(cause);
    }
  }
  for (ck::FailureCause& cause : c.failures.causes) {
    cause.repair_time = cause.needs_replacement ? r.repair_time : sim::Time();
  }

  for (const ResolvedFault& rf : r.faults) {
    Result<rn::ScheduledFault> f = MakeScheduledFault(rf);
    if (!f.ok()) return f.status();
    c.faults.push_back(f.value());
  }
  if (s.cost().has_usd_per_gpu_hour()) c.usd_per_gpu_hour = s.cost().usd_per_gpu_hour();
  c.bill_spares = !s.cost().has_bill_spares() || s.cost().bill_spares();
  if (s.has_seed()) c.seed = s.seed();
  TRAINSIM_RETURN_IF_ERROR(rn::ValidateRunConfig(c));
  return c;
}

rn::StepTimeFn MakeStepTimeFn(const step::StepConfig& base,
                              std::optional<step::StepBreakdown> healthy) {
  // Shared by all copies of the callback, under one mutex (the run's trials may call it from
  // several threads): topologies by node count, built on first use, and the simulated step's
  // breakdown per cluster state as the simulation sees it. The background checkpoint share only
  // stretches a breakdown afterwards, so a state that differs from another only in it (every
  // ASYNC run has one: the steps while a checkpoint is written) is not simulated again, nor is
  // the healthy state when the caller has simulated it already (`healthy`).
  struct Shared {
    std::mutex mu;
    std::map<int, std::shared_ptr<comm::Topology>> topologies;
    // (live replicas, GPU slowdowns, NIC link factors): the simulated step's breakdown.
    using Key =
        std::tuple<int, std::vector<std::pair<int, double>>, std::vector<std::pair<int, double>>>;
    std::map<Key, step::StepBreakdown> steps;
  };
  auto shared = std::make_shared<Shared>();
  if (healthy) shared->steps.emplace(Shared::Key{base.parallel.dp, {}, {}}, *healthy);
  return [base, shared](const rn::RunState& state) -> Result<rn::StepTiming> {
    step::StepConfig cfg = base;
    const int full_dp = base.parallel.dp;
    const int live = state.live_dp_replicas > 0 ? state.live_dp_replicas : full_dp;
    auto stretched = [&state](step::StepBreakdown b) {
      if (state.checkpoint_traffic_share > 0) {
        const double stretch = 1.0 / (1.0 - std::min(0.9, state.checkpoint_traffic_share));
        b.exposed_dp_comm_s *= stretch;
        b.pp_wait_s *= stretch;
      }
      return ToStepTiming(b);
    };
    Shared::Key key{live, state.gpu_slowdown, state.nic_link_factor};
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      auto it = shared->steps.find(key);
      if (it != shared->steps.end()) return stretched(it->second);
    }
    if (live != full_dp) {
      const int gpn = base.topology.gpus_per_node;
      const int replica = base.parallel.tp * base.parallel.cp * base.parallel.pp;
      const int64_t gpus = int64_t{replica} * live;
      if (gpn <= 0 || gpus % gpn != 0) {
        return Status::FailedPrecondition(
            "ELASTIC recovery needs every data-parallel replica to fill whole nodes (tp × cp × pp "
            "= " +
            std::to_string(replica) + " GPUs, " + std::to_string(gpn) + " per node)");
      }
      cfg.topology.nodes = static_cast<int>(gpus / gpn);
      cfg.parallel.dp = live;
      // Keep the global batch: the survivors take the lost replicas' micro-batches.
      const int64_t per_replica = int64_t{cfg.parallel.micro_batch} * live;
      int64_t micro = (base.parallel.global_batch + per_replica - 1) / per_replica;
      if (cfg.parallel.virtual_stages > 1) {
        micro = (micro + cfg.parallel.pp - 1) / cfg.parallel.pp * cfg.parallel.pp;
      }
      cfg.parallel.global_batch = micro * per_replica;
    }
    step::ClusterState ps;
    const int gpus = cfg.parallel.num_gpus();
    for (const auto& [gpu, f] : state.gpu_slowdown) {
      if (gpu < gpus) ps.gpu_slowdown.push_back({gpu, f});
    }
    if (!state.nic_link_factor.empty()) {
      std::shared_ptr<comm::Topology> slot;
      {
        std::lock_guard<std::mutex> lock(shared->mu);
        slot = shared->topologies[cfg.topology.nodes];
      }
      if (!slot) {
        Result<comm::Topology> topo = comm::Topology::Build(cfg.topology);
        if (!topo.ok()) return topo.status();
        slot = std::make_shared<comm::Topology>(std::move(topo).value());
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->topologies[cfg.topology.nodes] = slot;
      }
      const int nics = cfg.topology.nodes * cfg.topology.nics_per_node;
      for (const auto& [nic, f] : state.nic_link_factor) {
        if (nic >= nics) continue;
        ps.links.push_back({slot->nic_tx(nic), f});
        ps.links.push_back({slot->nic_rx(nic), f});
      }
    }
    Result<step::StepResult> r = step::SimulateStep(cfg, ps);
    if (!r.ok()) return r.status();
    {
      // Two threads may simulate the same state; the results are equal (deterministic).
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->steps.emplace(std::move(key), r->breakdown);
    }
    return stretched(r->breakdown);
  };
}

namespace detail {

std::optional<FieldError> ValidateCost(const pb::Cost& c) {
  struct Range {
    const char* path;
    double v, lo, hi;
    const char* what;
  };
  for (const Range& r :
       {Range{"cost.usd_per_gpu_hour", c.usd_per_gpu_hour(), 0, 1e6, "price per GPU-hour (USD)"},
        Range{"cost.usd_per_kwh", c.usd_per_kwh(), 0, 1e3, "electricity price per kWh (USD)"},
        Range{"cost.pue", c.pue(), 1, 10, "power usage effectiveness (facility / IT power)"},
        Range{"cost.gpu_idle_fraction", c.gpu_idle_fraction(), 0, 1,
              "a waiting GPU's draw as a fraction of its board power"}}) {
    // The messages of validate.cc's Finite, word for word.
    std::ostringstream m;
    if (!std::isfinite(r.v)) {
      m << r.v << " is not a finite number; " << r.what;
      return FieldError{r.path, m.str()};
    }
    if (r.v < r.lo || r.v > r.hi) {
      m << r.v << " is out of range: " << r.what << " must be >= " << r.lo << " and <= " << r.hi;
      return FieldError{r.path, m.str()};
    }
  }
  return std::nullopt;
}

}  // namespace detail

}  // namespace trainsim::scenarios
