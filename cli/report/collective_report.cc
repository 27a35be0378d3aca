#include "cli/report/collective_report.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <sstream>
#include <string>

#include "cli/report/format.h"
#include "comm/message_size.h"

namespace trainsim::cli::report {
namespace {

// The protocol the model picked; a measured time has none of ours (NCCL chose it): "nccl".
std::string ProtocolText(const comm::CollectiveTiming& t) {
  return t.protocol ? std::string(comm::ProtocolName(*t.protocol)) : std::string("nccl");
}

}  // namespace

nlohmann::ordered_json CollectiveJson(comm::Op op, const scenarios::CollectiveOutcome& o) {
  const comm::Calibration* cal = o.calibration ? &*o.calibration : nullptr;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const scenarios::CollectiveRow& r : o.rows) {
    nlohmann::ordered_json row = {{"op", std::string(comm::OpName(op))},
                                  {"algo", std::string(comm::AlgoName(r.estimate.algo))},
                                  {"protocol", ProtocolText(r.estimate)},
                                  {"group", o.group_size},
                                  {"size_bytes", r.bytes},
                                  {"time_s", r.time_s},
                                  {"algbw_GBps", r.algbw_GBps},
                                  {"busbw_GBps", r.busbw_GBps},
                                  {"source", r.estimate.calibrated ? "calibration" : "model"}};
    if (cal != nullptr) {
      row["calibration"] = {{"file", cal->path()},
                            {"gpu", cal->gpu_name()},
                            {"nccl_version", cal->nccl_version()},
                            {"sample", cal->is_sample()}};
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::string FormatCollectiveTable(comm::Op op, const std::string& algo_text, bool expand,
                                  const scenarios::CollectiveOutcome& o) {
  const comm::Calibration* cal = o.calibration ? &*o.calibration : nullptr;
  const int n = o.group_size;
  std::ostringstream out;
  out << "# trainsim collective: " << comm::OpName(op) << ", algo " << algo_text << ", " << n
      << " GPUs of " << o.num_gpus << " (" << o.num_nodes
      << (o.num_nodes == 1 ? " node x " : " nodes x ") << o.gpus_per_node << ")\n"
      << "# "
      << (expand ? "flow-level expansion on the event engine" : "closed form (idle network)")
      << "; busbw factor " << Fmt("%.4f", comm::BusBandwidthFactor(op, n)) << "\n";
  int calibrated_rows = 0;
  for (const scenarios::CollectiveRow& r : o.rows) calibrated_rows += r.estimate.calibrated ? 1 : 0;
  if (cal != nullptr) {
    out << "# " << cal->Describe() << "\n"
        << "# " << calibrated_rows << " of " << o.rows.size()
        << " rows calibrated (source calib: interpolated log-log between measured sizes), "
           "the rest modelled (source model)\n";
  }
  out << "#" << AlignRight("bytes", 13) << AlignRight("size", 14) << AlignRight("time(us)", 13)
      << AlignRight("algbw(GB/s)", 13) << AlignRight("busbw(GB/s)", 13) << "  algo          proto"
      << (cal != nullptr ? "   source" : "") << "\n";
  for (const scenarios::CollectiveRow& r : o.rows) {
    out << AlignRight(std::to_string(r.bytes), 14)
        << AlignRight(comm::FormatMessageSize(r.bytes), 14)
        << AlignRight(Fmt("%.2f", r.time_s * 1e6), 13) << AlignRight(Fmt("%.2f", r.algbw_GBps), 13)
        << AlignRight(Fmt("%.2f", r.busbw_GBps), 13) << "  ";
    std::string algo_name(comm::AlgoName(r.estimate.algo));
    algo_name.resize(14, ' ');
    std::string proto = ProtocolText(r.estimate);
    if (cal == nullptr) {
      out << algo_name << proto << "\n";
      continue;
    }
    proto.resize(8, ' ');
    out << algo_name << proto << (r.estimate.calibrated ? "calib" : "model") << "\n";
  }
  return out.str();
}

namespace {

// nccl-tests' time column (common.cu, BenchTime): 7 wide, fewer decimals as it grows.
std::string NcclTestsTime(double us) {
  if (us >= 10000.0) return Fmt("%7.0f", us);
  if (us >= 100.0) return Fmt("%7.1f", us);
  return Fmt("%7.2f", us);
}

std::string Printf(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

}  // namespace

std::string FormatNcclTestsTable(comm::Op op, const std::string& algo_text, bool expand,
                                 const NcclTestsRange& range,
                                 const scenarios::CollectiveOutcome& o) {
  const int n = o.group_size;
  // nccl-tests' element type by default (-d float): 4 bytes.
  constexpr uint64_t kFloatBytes = 4;
  // What nccl-tests prints per op (its *_perf binaries): the reduction of the reducing
  // collectives, "none" for the others; the root of broadcast (-r, default 0), -1 otherwise;
  // the count per rank for the collectives whose buffers are split over the ranks.
  const bool reduces = op == comm::Op::kAllReduce || op == comm::Op::kReduceScatter;
  const bool split =
      op == comm::Op::kAllGather || op == comm::Op::kReduceScatter || op == comm::Op::kAllToAll;
  const int root = op == comm::Op::kBroadcast ? 0 : -1;
  std::string out;
  out += Printf(
      "# nThread 1 nGpus %d minBytes %llu maxBytes %llu step: %llu(factor) warmup iters: 0 "
      "iters: 0 agg iters: 1 validation: 0 graph: 0\n",
      n, static_cast<unsigned long long>(range.min_bytes),
      static_cast<unsigned long long>(range.max_bytes),
      static_cast<unsigned long long>(range.step_factor));
  out += "#\n";
  out += "# Predicted by trainsim (" +
         std::string(expand ? "flow-level expansion on the event engine"
                            : "closed form on an idle network") +
         "): " + std::string(comm::OpName(op)) + ", algo " + algo_text + ", " + std::to_string(n) +
         " GPUs of " + std::to_string(o.num_gpus) + " (" + std::to_string(o.num_nodes) +
         (o.num_nodes == 1 ? " node x " : " nodes x ") + std::to_string(o.gpus_per_node) + ")\n";
  if (o.calibration) out += "# " + o.calibration->Describe() + "\n";
  if (o.sizes_left_out > 0) {
    out += "# " + std::to_string(o.sizes_left_out) + " size(s) under " +
           (split ? "16 bytes per rank" : "one float") +
           " left out (nccl-tests prints them with count 0 and moves nothing)\n";
  }
  out += "#\n";
  out += Printf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
      "in-place          \n",
      "", "", "", "", "");
  out += Printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong");
  out += Printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "");
  double busbw_sum = 0;
  for (const scenarios::CollectiveRow& r : o.rows) {
    const uint64_t count = r.bytes / kFloatBytes / (split ? uint64_t(std::max(1, n)) : 1);
    out += Printf("%12llu  %12llu  %8s  %6s  %6i", static_cast<unsigned long long>(r.bytes),
                  static_cast<unsigned long long>(count), "float", reduces ? "sum" : "none", root);
    const std::string time = NcclTestsTime(r.time_s * 1e6);
    for (int place = 0; place < 2; ++place) {
      out += Printf("  %7s  %6.2f  %6.2f  %5s", time.c_str(), r.algbw_GBps, r.busbw_GBps, "N/A");
      busbw_sum += r.busbw_GBps;
    }
    out += "\n";
  }
  out += "# Out of bounds values : 0 OK\n";
  out += Printf("# Avg bus bandwidth    : %g \n",
                o.rows.empty() ? 0.0 : busbw_sum / double(2 * o.rows.size()));
  out += "#\n";
  return out;
}

}  // namespace trainsim::cli::report
