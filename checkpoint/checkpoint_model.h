// checkpoint::CheckpointCosts — how big a checkpoint is and how long saving and loading it take,
// and the Young/Daly optimal checkpoint intervals.
//
// Size = parameters × bytes per parameter (default 14: bf16 weights 2 + fp32 master weights 4 +
// two fp32 Adam moments 8; gradients are not saved — REFERENCES.md, "12–14 bytes per parameter").
// The checkpoint is written in parallel by the nodes that hold distinct shards (Megatron-core's
// fully parallel save spreads it over every data-parallel rank, so by default all nodes write).
// Each writing node is limited by min(its storage NIC bandwidth, its GPUs' copy bandwidth to the
// host), and all of them together by the storage system's aggregate write bandwidth. Loading is
// the same with the read bandwidth and all of the job's nodes reading.
//
// Promises: every time is a whole number of nanoseconds, rounded up (a write never takes less
// than its bandwidth allows); the functions are pure. Young and Daly follow
// docs/evidence/references.md ("Formulas used by the validation sources") exactly.
#ifndef TRAINSIM_CHECKPOINT_CHECKPOINT_MODEL_H_
#define TRAINSIM_CHECKPOINT_CHECKPOINT_MODEL_H_

#include <cstdint>
#include <optional>

#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::checkpoint {

// Bytes per parameter of a resumable mixed-precision Adam checkpoint: bf16 weights (2) + fp32
// master weights (4) + fp32 momentum and variance (8). Gradients are not saved.
inline constexpr double kDefaultCheckpointBytesPerParam = 14.0;

// The hardware a checkpoint moves over.
struct CheckpointHardware {
  int nodes = 0;          // nodes in the job
  int gpus_per_node = 0;  // GPUs per node
  // Bandwidth each node has towards the storage system and its peers (GB/s, 1e9 bytes/s): the
  // NICs that carry storage traffic. Default 50 GB/s = one 400 Gb/s NIC.
  double node_net_GBps = 50.0;
  // GPU-to-host copy bandwidth per GPU (GB/s): what a snapshot copies each GPU's shard at (the
  // scenario sets it from the GPU: PCIe, or NVLink-C2C on Grace superchips, at its measured copy
  // efficiency; scenarios::HostCopyGBps). Default 25 GB/s when nothing sets it.
  double host_copy_GBps_per_gpu = 25.0;
  // Storage system aggregate write / read bandwidth (GB/s). Default 2000 GB/s write and read:
  // Llama 3's storage sustained 2 TB/s (peak 7 TB/s), REFERENCES.md.
  double storage_write_GBps = 2000.0;
  double storage_read_GBps = 2000.0;
  // Fraction of a node's network bandwidth the in-memory checkpoint's copy to a peer node may
  // use while training runs. A modelling choice, not a measurement: Gemini (SOSP'23) interleaves
  // checkpoint traffic with training traffic; half the NIC is the assumption stated here.
  double peer_copy_share = 0.5;
};

struct CheckpointSpec {
  int64_t parameters = 0;
  double bytes_per_param = kDefaultCheckpointBytesPerParam;
  // Nodes that write distinct shards; 0 means all nodes (fully parallel save across DP ranks).
  int writer_nodes = 0;
};

struct CheckpointCosts {
  double size_bytes = 0;
  double bytes_per_node = 0;  // size / writer nodes
  // Per-node bandwidth towards storage: min(node_net, gpus_per_node × host copy) (GB/s).
  double node_write_GBps = 0;
  // Synchronous write of the whole checkpoint to storage (also the background write's length).
  sim::Time persistent_write;
  // Copy of each GPU's shard to host memory (the blocking phase of async and in-memory).
  sim::Time snapshot;
  // Copy of each node's shard to a peer node's host memory, at peer_copy_share of the NIC.
  sim::Time peer_copy;
  // Load of the whole checkpoint from storage: size / min(storage read, nodes × node bandwidth).
  sim::Time storage_load;
  // Load of each node's shard back from its peer's memory at full node bandwidth.
  sim::Time peer_load;
  // Fraction of each node's network bandwidth a background storage write occupies (0..1];
  // handed to the step simulation as ClusterState::checkpoint_traffic_share.
  double background_write_share = 0;
  // The same for the background peer copy (= peer_copy_share).
  double peer_copy_traffic_share = 0;
};

// Validates the inputs and computes the costs. Errors name the offending field.
Result<CheckpointCosts> ComputeCheckpointCosts(const CheckpointSpec& spec,
                                               const CheckpointHardware& hw);

// Duration of moving `bytes` at `GBps` (1e9 bytes/s), rounded up to a whole nanosecond; nullopt
// when it does not fit sim::Time (±292 years: a tiny but positive bandwidth) or is not finite.
std::optional<sim::Time> TransferTimeChecked(double bytes, double GBps);
// TransferTimeChecked, saturated: sim::Time::Max() ("never completes") where it does not fit.
// REQUIRES: bytes >= 0, GBps > 0. ComputeCheckpointCosts refuses instead of saturating.
sim::Time TransferTime(double bytes, double GBps);

// Young (1974): tau = sqrt(2·delta·M). REQUIRES: delta >= 0, M > 0 (seconds).
double YoungIntervalSeconds(double delta_s, double mtbf_s);
// Daly (2006): tau = sqrt(2δM)·[1 + ⅓·sqrt(δ/(2M)) + (1/9)·(δ/(2M))] − δ for δ < 2M, else M.
double DalyIntervalSeconds(double delta_s, double mtbf_s);
// Daly's expected useful fraction with restart time R: e^(−R/M)·(τ/M) / (e^((τ+δ)/M) − 1).
double DalyUsefulFraction(double tau_s, double delta_s, double mtbf_s, double restart_s);

}  // namespace trainsim::checkpoint

#endif  // TRAINSIM_CHECKPOINT_CHECKPOINT_MODEL_H_
