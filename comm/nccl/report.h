// The runner's results: the rows it measured, the nccl-tests-like table it prints and the
// calibration JSON it writes (comm/calibration.h reads it back).
//
// The JSON is written by hand (the runner has no JSON library so that it builds with only the
// CUDA toolkit, NCCL and a compiler). Strings are escaped per RFC 8259; numbers are printed with
// 17 significant digits (round-trip exact). Row order is the measurement order, which is a
// function of the options only, so the same options give the same layout.
#ifndef TRAINSIM_COMM_NCCL_REPORT_H_
#define TRAINSIM_COMM_NCCL_REPORT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace trainsim::comm::nccl {

struct CollectiveRow {
  std::string op;    // all_reduce, reduce_scatter, all_gather, broadcast, send_recv
  std::string algo;  // ring, tree, direct (send_recv)
  int nranks = 0;
  int nodes = 1;           // machines the group spans
  int64_t size_bytes = 0;  // nccl-tests' size (see comm/calibration.h)
  int64_t count = 0;       // float elements per rank buffer as NCCL is called
  double time_s = 0;       // median over the repeats
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  bool checked = false;  // result compared on the host (and matched: a mismatch is an error)
};

struct GemmRow {
  std::string name;
  std::string dtype;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  double time_s = 0;
  double tflops = 0;
  bool checked = false;
};

struct Report {
  std::string gpu_name;
  int gpu_count = 0;
  std::string compute_capability;  // "9.0"
  std::string nccl_version;        // "2.28.9"
  std::string cuda_version;        // runtime "13.0"
  std::string driver_version;      // CUDA driver API version, "13.0"
  std::string date;                // UTC, ISO 8601
  std::string note;
  std::vector<CollectiveRow> collectives;
  std::vector<GemmRow> gemms;
};

// busbw factor of nccl-tests (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; reduce_scatter and
// all_gather (n-1)/n (so 0 on one rank); broadcast and send_recv 1.
double BusBwFactor(const std::string& op, int nranks);

// A string as a JSON string literal (quotes included).
std::string JsonString(const std::string& s);
void WriteJson(const Report& r, std::ostream& out);

// nccl-tests-style tables (one line per row; the header once).
void PrintCollectiveHeader(std::ostream& out);
void PrintCollectiveRow(const CollectiveRow& row, std::ostream& out);
void PrintGemmHeader(std::ostream& out);
void PrintGemmRow(const GemmRow& row, std::ostream& out);

}  // namespace trainsim::comm::nccl

#endif  // TRAINSIM_COMM_NCCL_REPORT_H_
