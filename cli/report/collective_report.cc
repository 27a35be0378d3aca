#include "cli/report/collective_report.h"

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
      << " GPUs of " << o.num_gpus << " (" << o.num_nodes << " nodes x " << o.gpus_per_node << ")\n"
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

}  // namespace trainsim::cli::report
