// comm/calibration.h — measured collective times and matrix-product throughput that replace
// datasheet numbers in the simulator: a JSON file written by the NCCL/cuBLAS runner (comm/nccl/,
// `trainsim calibrate`) or by hand, with the GPU, NCCL and CUDA versions, a collectives table
// and a GEMM table (docs/calibration.md describes the format and the lookups).
//
// Promises: LoadCalibration never crashes and never accepts a file it cannot fully use: syntax
// errors name path:line:column, schema errors name the field path ("collectives[3].time_s") and
// what is valid; unknown fields, duplicate rows, non-positive sizes and negative or non-finite
// times are rejected. Lookups are pure and deterministic. Within one (op, algo, nranks) curve
// the sizes are distinct; rows keep their file order (the nearest-GEMM rule's tie-break).
#ifndef TRAINSIM_COMM_CALIBRATION_H_
#define TRAINSIM_COMM_CALIBRATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/collective.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::comm {

// Collective names as they appear in calibration files: comm::OpName's (nccl-tests' names).
inline constexpr std::string_view kCalibOps[] = {"all_reduce", "reduce_scatter", "all_gather",
                                                 "broadcast",  "all_to_all",     "send_recv"};
// Algorithm names: NCCL_ALGO values in lower case (ring and tree are comm::AlgoName's), and
// comm::AlgoName(kDirect) = "direct" for send/recv and all-to-all, which have no NCCL algorithm.
inline constexpr std::string_view kCalibAlgos[] = {"ring",    "tree", "nvls",  "nvlstree",
                                                   "collnet", "pat",  "direct"};
// Matrix-product input types.
inline constexpr std::string_view kCalibDtypes[] = {"bf16", "fp16", "fp8"};

struct CollectiveSample {
  std::string op;
  std::string algo;
  int nranks = 0;
  int nodes = 1;
  int64_t size_bytes = 0;
  double time_s = 0;
  double busbw_GBps = 0;
};

struct GemmSample {
  std::string dtype;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  double tflops = 0;
};

class Calibration {
 public:
  const std::string& path() const { return path_; }
  const std::string& gpu_name() const { return gpu_name_; }
  int gpu_count() const { return gpu_count_; }
  const std::string& nccl_version() const { return nccl_version_; }
  const std::string& cuda_version() const { return cuda_version_; }
  const std::string& date() const { return date_; }
  // True for hand-made files (the checked-in sample): reports must say the numbers are not
  // measured.
  bool is_sample() const { return sample_; }
  const std::vector<CollectiveSample>& collectives() const { return collectives_; }
  const std::vector<GemmSample>& gemms() const { return gemms_; }

  // Time of one collective, interpolated log-log in size between the two measured sizes that
  // bracket `bytes` on the curve with exactly this op, algo, nranks and nodes (a power law between
  // points: exact at measured sizes, and right for both the latency-bound and the
  // bandwidth-bound end). nullopt when there is no such curve or `bytes` lies outside
  // [smallest, largest] measured size: the caller falls back to its model rather than
  // extrapolating a measurement.
  std::optional<sim::Time> CollectiveTime(std::string_view op, std::string_view algo, int nranks,
                                          int64_t bytes, int nodes = 1) const;
  // The same for the simulator's enums (Algo::kDirect is "direct"; kAuto and kHierarchical
  // are never measured as such and give nullopt).
  std::optional<sim::Time> CollectiveTime(Op op, Algo algo, int nranks, int64_t bytes,
                                          int nodes = 1) const;
  // True when some row has this op, algo, nranks and nodes (whatever the sizes).
  bool HasCollective(std::string_view op, std::string_view algo, int nranks, int nodes = 1) const;

  // Measured TFLOP/s of a matrix product. Rule: an exact (m, n, k, batch) row of this dtype;
  // otherwise the row of this dtype nearest in log space (smallest sum of |ln ratio| over m, n,
  // k and batch; the earlier row on a tie), accepted only if every dimension is within a factor
  // of 2 of the query. nullopt otherwise (GEMM efficiency moves a lot with shape; beyond 2× the
  // datasheet-based model is the better guess).
  std::optional<double> GemmTflops(std::string_view dtype, int64_t m, int64_t n, int64_t k,
                                   int64_t batch = 1) const;

  // Efficiency relative to a dense peak: GemmTflops / peak_tflops, for the simulator's
  // matrix-product efficiency (a measured rate above the stated peak is returned as is: the
  // caller's peak is then wrong, which its own checks should say). nullopt as GemmTflops, or
  // when peak_tflops <= 0.
  std::optional<double> GemmEfficiency(std::string_view dtype, int64_t m, int64_t n, int64_t k,
                                       int64_t batch, double peak_tflops) const;

  // One line for reports: where the numbers came from, e.g.
  //   "calibration h100.json: measured 2026-11-30T10:00:00Z on 8 x NVIDIA H100 80GB HBM3,
  //    NCCL 2.28.9, CUDA 13.0"
  // and for a sample file "SAMPLE calibration ... (not measured)".
  std::string Describe() const;

  // OK when this calibration was measured on the scenario's GPU type. Names are compared by
  // their model token: the first alphanumeric word that is letters followed by digits ("h100" in
  // "NVIDIA H100 80GB HBM3" and in "H100-SXM-80GB"), case-insensitive; when the scenario's name
  // has no such word, its whole lower-cased name must occur in the calibration's. Error
  // (FailedPrecondition) names both GPUs and the file.
  Status CheckGpu(std::string_view scenario_gpu) const;

 private:
  friend Result<Calibration> ParseCalibration(std::string_view text, const std::string& path);
  std::string path_, gpu_name_, nccl_version_, cuda_version_, date_;
  int gpu_count_ = 0;
  bool sample_ = false;
  std::vector<CollectiveSample> collectives_;
  std::vector<GemmSample> gemms_;
};

// Reads and validates a calibration file. Errors: NotFound (cannot read), InvalidArgument
// ("path:line:column: ..." for JSON syntax, "path: collectives[3].time_s: ..." for schema).
Result<Calibration> LoadCalibration(const std::string& path);
// LoadCalibration, then CheckGpu(scenario_gpu): what a command does with cluster.calibration or
// --calibration before using the numbers.
Result<Calibration> LoadCalibrationFor(const std::string& path, std::string_view scenario_gpu);
// The same from text; `path` is only used in messages.
Result<Calibration> ParseCalibration(std::string_view text, const std::string& path);

// A collective's time, and whether it came from a calibration or from the model.
struct CollectiveTiming {
  sim::Time time;
  Algo algo = Algo::kRing;           // never kAuto: what was used
  std::optional<Protocol> protocol;  // the model's pick; nullopt when measured (NCCL chose)
  bool calibrated = false;
};

// EstimateCollective (comm/collective.h) with a calibration in front of it: when `calibration`
// is non-null and has a curve for the spec's op, algorithm, group size (gpus.size()) and node
// count (distinct topology nodes among gpus) that covers spec.bytes, the measured time;
// otherwise the model's estimate, unchanged. With Algo::kAuto the fastest calibrated algorithm
// among AlgorithmsFor(op) is used (earlier in that order on a tie), as NCCL's tuner would pick
// it; if none is calibrated, the model's kAuto choice. Errors as EstimateCollective.
Result<CollectiveTiming> EstimateCollectiveCalibrated(const Topology& topology,
                                                      const CollectiveSpec& spec,
                                                      const Calibration* calibration);

// One matrix product C[m×n] = A[m×k]·B[k×n] (`batch` of them) with its role ("qkv",
// "fc1.wgrad", ...): what `trainsim calibrate` asks the runner to time
// (parallelism::GemmShapesOf lists a layer's).
struct GemmShape {
  std::string name;
  int64_t m = 0, n = 0, k = 0, batch = 1;
};

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_CALIBRATION_H_
