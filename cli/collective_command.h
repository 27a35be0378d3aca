// `trainsim collective SCENARIO --op OP [--algo ALGO] [--group G] [--sizes MIN:MAX]
//  [--step-factor F] [--expand] [--json] [--set PATH=VALUE]...`: times one collective over a
// group of the scenario's GPUs for a range of message sizes, printed like nccl-tests (size, time,
// algbw, busbw, plus the algorithm and protocol used). Times come from comm::EstimateCollective
// (the closed form on an idle network); --expand runs the flow-level expansion on the event
// engine instead (they agree within 1%; the expansion is slower for large groups).
//
// --group: N (the first N GPUs in rank order, tensor-parallel innermost), a comma list of GPU ids
// ("0,8,16,24"), or N/STRIDE (N GPUs 0, STRIDE, 2·STRIDE, …: one GPU per node with STRIDE = GPUs
// per node). Default: every GPU of the scenario. --sizes: "8B:8GiB" (doubling, or multiplying by
// --step-factor) or one size; KB/MB/GB are powers of 10, KiB/MiB/GiB powers of 2.
// --json: an array of rows {op, algo, protocol, group, size_bytes, time_s, algbw_GBps,
// busbw_GBps}. busbw = algbw · 2(n−1)/n for all-reduce, (n−1)/n for reduce-scatter, all-gather
// and all-to-all, 1 for broadcast and send/recv (nccl-tests' convention).
// --calibration FILE (default: the scenario's cluster.calibration): rows whose op, algorithm,
// group size, node count and size a measured curve covers take the measured time
// (comm::EstimateCollectiveCalibrated: log-log interpolation, never extrapolated; with --algo
// auto the fastest calibrated algorithm); the table's header names the file, its GPU, NCCL
// version and whether it is a sample, and a "source" column says calib or model per row (JSON:
// "source": "calibration"|"model", and "calibration": {file, gpu, nccl_version, sample}).
// Measured rows have protocol "nccl" (NCCL chose it) and are not re-run by --expand.
// Bad input (unknown op or algorithm, a group larger than the cluster, a size of 0 or with a bad
// unit, a calibration file that is missing, does not parse or was measured on another GPU type):
// one message on stderr and exit 2.
#ifndef TRAINSIM_CLI_COLLECTIVE_COMMAND_H_
#define TRAINSIM_CLI_COLLECTIVE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace trainsim::cli {

void AddCollectiveCommand(CLI::App& app, int* exit_code);

// Parses --group against a cluster of `num_gpus` GPUs (see the header comment).
Result<std::vector<int>> ParseGroup(std::string_view text, int num_gpus);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_COLLECTIVE_COMMAND_H_
