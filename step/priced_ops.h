// step/priced_ops.h — the ops whose times a step looks up, and the TP-overlap chunks among them.
//
// What `trainsim calibrate` measures must be what the step simulation looks a calibration up
// with; PricedGemmOps is that list for both (scenarios::CalibrateRunnerArgs and the step's
// calibration coverage). Pure functions of their arguments.
#ifndef TRAINSIM_STEP_PRICED_OPS_H_
#define TRAINSIM_STEP_PRICED_OPS_H_

#include <vector>

#include "parallelism/model.h"
#include "step/step_simulation.h"

namespace trainsim::step {

// The GEMMs whose input TP all-gathers or whose output TP reduce-scatters under sequence
// parallelism (column- and row-parallel linears); not the router, the experts (EP all-to-all),
// MLA's replicated down-projections or the logits.
bool TpPairedGemm(const parallelism::KernelOp& op);

// Whether TP communication overlap runs `op` as tp chunks: a TP-paired GEMM of at least tp rows,
// with tp > 1 (else it runs whole).
bool RunsAsTpChunks(const parallelism::KernelOp& op, int tp);

// One of the tp chunks Transformer Engine's userbuffers split a TP-paired GEMM `op` into (m/tp
// rows; FLOPs and bytes to match).
parallelism::KernelOp TpChunkOf(const parallelism::KernelOp& op, int tp, double bytes_per_element);

// Every op whose time the step looks up, calibration included: parallelism::PricedOps under the
// layout's split, plus, with TP communication overlap, the chunks of each TP-paired GEMM.
std::vector<parallelism::KernelOp> PricedGemmOps(const StepConfig& cfg);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_PRICED_OPS_H_
