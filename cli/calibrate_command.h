// `trainsim calibrate SCENARIO [-o FILE] [--nranks LIST] [--quick] [--runner PATH] [--dry-run]`:
// measures this machine's GPUs for the scenario and writes a calibration file that
// `cluster.calibration` (or --calibration) then loads in place of datasheet numbers.
//
// Design: trainsim itself does not link CUDA. It computes the matrix-product shapes one
// transformer layer of the scenario's model runs on one TP rank (comm::TransformerLayerGemms),
// and executes the standalone runner `trainsim-nccl-calibrate` (comm/nccl/), found next to the
// trainsim binary, in $TRAINSIM_NCCL_CALIBRATE, or at --runner. So trainsim builds and runs on
// machines without CUDA, the runner builds on GPU machines without trainsim's other
// dependencies, and a crashed driver takes down the runner, not trainsim. The runner's table
// streams through; afterwards the file is loaded back and its GPU checked against the
// scenario's.
// Exit codes: 0 written; 2 bad input, runner failure (no GPU, NCCL error, timeout, wrong
// result) or a calibration of the wrong GPU; 3 the runner is not installed.
#ifndef TRAINSIM_CLI_CALIBRATE_COMMAND_H_
#define TRAINSIM_CLI_CALIBRATE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "comm/calibration.h"
#include "scenarios/scenario.h"
#include "sim/status.h"

namespace trainsim::cli {

struct CalibrateOptions {
  std::string output;  // default: <scenario stem>.calibration.json in the working directory
  std::string nranks;  // forwarded to the runner's --nranks
  bool quick = false;  // 8 B .. 1 GiB by 8×, 3 repeats: the short run of scripts/gpu-check.sh
  std::string runner;
};

void AddCalibrateCommand(CLI::App& app, int* exit_code);

// The runner's arguments (argv[1..]) for a resolved scenario: its layer's GEMM shapes under its
// TP degree, the dtypes of its precision (BF16 → bf16; FP16 → fp16; FP8 → fp8 and bf16, since
// FP8 recipes keep attention and some layers in BF16), --expect-gpu with the scenario's GPU,
// and -o. Errors when the model cannot be sharded as asked, or the precision has no GEMM type
// (TF32).
Result<std::vector<std::string>> CalibrateRunnerArgs(const scenarios::ResolvedScenario& resolved,
                                                     const CalibrateOptions& options,
                                                     const std::string& output);

// The default output path for a scenario path: "dir/gpt.textproto" → "gpt.calibration.json".
std::string DefaultCalibrationPath(const std::string& scenario_path);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_CALIBRATE_COMMAND_H_
