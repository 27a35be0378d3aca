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

// Transformer Engine's userbuffers split the GEMMs they overlap (module/base.py, initialize_ub's
// default methods): a column-parallel GEMM's forward and a row-parallel GEMM's dgrad consume an
// all-gather as a ring exchange, tp GEMMs of m/tp rows; a row-parallel GEMM's forward feeds its
// reduce-scatter as a pipeline of 4 splits; a column-parallel GEMM's dgrad and every wgrad
// overlap their collective in bulk, whole. The chunks are issued round-robin on its compute
// streams (comm_gemm_overlap.cpp: _stream_compute[i % size], NVTE_COMM_OVERLAP_MAX_STREAMS =
// 3): a chunk's GEMM waits only for its own rows, so up to three run at once and fill each
// other's last wave.
inline constexpr int kUbComputeStreams = 3;
inline constexpr int kUbPipelineSplits = 4;  // get_default_config: num_splits 4 for "pipeline"
// A row-parallel linear (its output reduce-scattered): attention's output projection, an MLP's
// down projection, Mamba's output projection. The other TP-paired GEMMs are column-parallel.
bool RowParallelGemm(const parallelism::KernelOp& op);
// The GEMMs userbuffers runs `op`'s forward (or, backward, its dgrad) as: tp, 4 or 1 (whole).
// `rs_ring`: the row-parallel forward's reduce-scatter as a ring exchange (tp chunks), as
// Megatron-Bridge's FP8 configs set it, instead of the 4-split pipeline.
int UbChunks(const parallelism::KernelOp& op, int tp, bool forward, bool rs_ring = false);
// `op` as n chunks in one grouped op: batch × n products of m/n rows on kUbComputeStreams
// streams (parallelism::KernelOp::streams); FLOPs the same, bytes each chunk's (its rows, the
// whole weight, its output rows).
parallelism::KernelOp TpChunksOf(const parallelism::KernelOp& op, int n, double bytes_per_element);

// Every op whose time the step looks up, calibration included: parallelism::PricedOps under the
// layout's split, plus, with TP communication overlap, the chunks of each TP-paired GEMM.
std::vector<parallelism::KernelOp> PricedGemmOps(const StepConfig& cfg);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_PRICED_OPS_H_
