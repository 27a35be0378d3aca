#include "checkpoint/checkpoint_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>

namespace trainsim::checkpoint {

namespace {

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }

Status RequirePositive(double v, const char* field) {
  if (!PositiveFinite(v)) {
    return Status::InvalidArgument(std::string(field) + " must be a positive finite number, got " +
                                   std::to_string(v));
  }
  return Status::Ok();
}

std::string Human(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::optional<sim::Time> TransferTimeChecked(double bytes, double GBps) {
  // bytes / (GB/s) = ns, since 1 GB/s = 1 byte/ns. The quotient of two user numbers: checked.
  return sim::Time::FromNanosChecked(std::ceil(bytes / GBps));
}

sim::Time TransferTime(double bytes, double GBps) {
  return TransferTimeChecked(bytes, GBps).value_or(sim::Time::Max());
}

Result<CheckpointCosts> ComputeCheckpointCosts(const CheckpointSpec& spec,
                                               const CheckpointHardware& hw) {
  if (spec.parameters <= 0) {
    return Status::InvalidArgument("checkpoint: the model has no parameters (got " +
                                   std::to_string(spec.parameters) + ")");
  }
  TRAINSIM_RETURN_IF_ERROR(RequirePositive(spec.bytes_per_param, "checkpoint.bytes_per_param"));
  if (hw.nodes <= 0 || hw.gpus_per_node <= 0) {
    return Status::InvalidArgument("checkpoint: nodes and gpus_per_node must be positive");
  }
  if (spec.writer_nodes < 0 || spec.writer_nodes > hw.nodes) {
    return Status::InvalidArgument(
        "checkpoint: writer_nodes must be in [0, nodes=" + std::to_string(hw.nodes) + "], got " +
        std::to_string(spec.writer_nodes));
  }
  TRAINSIM_RETURN_IF_ERROR(RequirePositive(hw.node_net_GBps, "cluster.node_net_GBps"));
  TRAINSIM_RETURN_IF_ERROR(
      RequirePositive(hw.host_copy_GBps_per_gpu, "the GPU's host copy bandwidth"));
  TRAINSIM_RETURN_IF_ERROR(RequirePositive(hw.storage_write_GBps, "cluster.storage.write_GBps"));
  TRAINSIM_RETURN_IF_ERROR(RequirePositive(hw.storage_read_GBps, "cluster.storage.read_GBps"));
  if (!PositiveFinite(hw.peer_copy_share) || hw.peer_copy_share > 1) {
    return Status::InvalidArgument("checkpoint.peer_copy_share must be in (0, 1]");
  }
  const double size_bytes = static_cast<double>(spec.parameters) * spec.bytes_per_param;
  if (!std::isfinite(size_bytes) || size_bytes > 1e18) {
    return Status::OutOfRange("checkpoint size " + std::to_string(size_bytes) +
                              " bytes is beyond the supported range");
  }
  const int writers = spec.writer_nodes == 0 ? hw.nodes : spec.writer_nodes;
  CheckpointCosts c;
  c.size_bytes = size_bytes;
  c.bytes_per_node = size_bytes / writers;
  c.node_write_GBps = std::min(hw.node_net_GBps, hw.gpus_per_node * hw.host_copy_GBps_per_gpu);
  const double write_GBps = std::min(hw.storage_write_GBps, writers * c.node_write_GBps);
  const double read_GBps = std::min(hw.storage_read_GBps, hw.nodes * c.node_write_GBps);
  // Every GPU of a writing node copies its share of the node's bytes to host memory over its
  // own link (PCIe, or NVLink-C2C).
  struct Leg {
    sim::Time* out;
    double bytes;
    double GBps;
    const char* what;
  };
  const Leg legs[] = {
      {&c.persistent_write, size_bytes, write_GBps,
       "writing the checkpoint to storage (cluster.storage.write_gbyte_per_s)"},
      {&c.snapshot, c.bytes_per_node / hw.gpus_per_node, hw.host_copy_GBps_per_gpu,
       "the GPU-to-host snapshot (the GPU's host copy bandwidth)"},
      {&c.peer_copy, c.bytes_per_node, hw.node_net_GBps * hw.peer_copy_share,
       "the peer copy (node network bandwidth x checkpoint.peer_copy_share)"},
      {&c.storage_load, size_bytes, read_GBps,
       "loading the checkpoint from storage (cluster.storage.read_gbyte_per_s)"},
      {&c.peer_load, c.bytes_per_node, hw.node_net_GBps,
       "loading from a peer (node network bandwidth)"},
  };
  for (const Leg& leg : legs) {
    std::optional<sim::Time> t = TransferTimeChecked(leg.bytes, leg.GBps);
    if (!t) {
      return Status::OutOfRange(std::string(leg.what) + ": " + Human(leg.bytes) + " bytes at " +
                                Human(leg.GBps) +
                                " GB/s takes longer than the simulator's 292-year range; raise "
                                "the bandwidth");
    }
    *leg.out = *t;
  }
  // Each writer streams at write_GBps / writers; that is this share of its network bandwidth.
  c.background_write_share = std::min(1.0, (write_GBps / writers) / hw.node_net_GBps);
  c.peer_copy_traffic_share = hw.peer_copy_share;
  return c;
}

double YoungIntervalSeconds(double delta_s, double mtbf_s) {
  return std::sqrt(2.0 * delta_s * mtbf_s);
}

double DalyIntervalSeconds(double delta_s, double mtbf_s) {
  if (delta_s >= 2.0 * mtbf_s) return mtbf_s;
  const double r = delta_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * delta_s * mtbf_s) * (1.0 + std::sqrt(r) / 3.0 + r / 9.0) - delta_s;
}

double DalyUsefulFraction(double tau_s, double delta_s, double mtbf_s, double restart_s) {
  return std::exp(-restart_s / mtbf_s) * (tau_s / mtbf_s) /
         (std::exp((tau_s + delta_s) / mtbf_s) - 1.0);
}

}  // namespace trainsim::checkpoint
