#include "comm/nccl/report.h"

#include <cstdio>
#include <string>

namespace trainsim::comm::nccl {
namespace {

std::string Num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

}  // namespace

double BusBwFactor(const std::string& op, int nranks) {
  const double n = nranks;
  // As nccl-tests: 0 on one rank, where nothing crosses a link.
  if (op == "all_reduce") return 2 * (n - 1) / n;
  if (op == "reduce_scatter" || op == "all_gather") return (n - 1) / n;
  return 1;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void WriteJson(const Report& r, std::ostream& out) {
  out << "{\n";
  out << "  \"format\": \"trainsim-calibration\",\n";
  out << "  \"version\": 1,\n";
  out << "  \"sample\": false,\n";
  if (!r.note.empty()) out << "  \"note\": " << JsonString(r.note) << ",\n";
  out << "  \"gpu_name\": " << JsonString(r.gpu_name) << ",\n";
  out << "  \"gpu_count\": " << r.gpu_count << ",\n";
  if (!r.compute_capability.empty()) {
    out << "  \"compute_capability\": " << JsonString(r.compute_capability) << ",\n";
  }
  out << "  \"nccl_version\": " << JsonString(r.nccl_version) << ",\n";
  out << "  \"cuda_version\": " << JsonString(r.cuda_version) << ",\n";
  if (!r.driver_version.empty()) {
    out << "  \"driver_version\": " << JsonString(r.driver_version) << ",\n";
  }
  out << "  \"date\": " << JsonString(r.date) << ",\n";
  out << "  \"collectives\": [";
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const CollectiveRow& c = r.collectives[i];
    out << (i ? ",\n    " : "\n    ") << "{\"op\": " << JsonString(c.op)
        << ", \"algo\": " << JsonString(c.algo) << ", \"nranks\": " << c.nranks
        << ", \"nodes\": " << c.nodes << ", \"size_bytes\": " << c.size_bytes
        << ", \"time_s\": " << Num(c.time_s) << ", \"algbw_GBps\": " << Num(c.algbw_GBps)
        << ", \"busbw_GBps\": " << Num(c.busbw_GBps) << "}";
  }
  out << (r.collectives.empty() ? "],\n" : "\n  ],\n");
  out << "  \"gemm\": [";
  for (size_t i = 0; i < r.gemms.size(); ++i) {
    const GemmRow& g = r.gemms[i];
    out << (i ? ",\n    " : "\n    ") << "{";
    if (!g.name.empty()) out << "\"name\": " << JsonString(g.name) << ", ";
    out << "\"dtype\": " << JsonString(g.dtype) << ", \"m\": " << g.m << ", \"n\": " << g.n
        << ", \"k\": " << g.k << ", \"batch\": " << g.batch << ", \"time_s\": " << Num(g.time_s)
        << ", \"tflops\": " << Num(g.tflops) << "}";
  }
  out << (r.gemms.empty() ? "]\n" : "\n  ]\n");
  out << "}\n";
}

void PrintCollectiveHeader(std::ostream& out) {
  out << "#\n#  op              algo  nranks         size(B)       count    time(us)"
         "  algbw(GB/s)  busbw(GB/s)  check\n";
}

void PrintCollectiveRow(const CollectiveRow& c, std::ostream& out) {
  char buf[200];
  std::snprintf(buf, sizeof(buf), "   %-15s %-5s %6d %15lld %11lld %11s %12s %12s  %s\n",
                c.op.c_str(), c.algo.c_str(), c.nranks, static_cast<long long>(c.size_bytes),
                static_cast<long long>(c.count), Fmt("%.2f", c.time_s * 1e6).c_str(),
                Fmt("%.2f", c.algbw_GBps).c_str(), Fmt("%.2f", c.busbw_GBps).c_str(),
                c.checked ? "OK" : "-");
  out << buf;
}

void PrintGemmHeader(std::ostream& out) {
  out << "#\n#  gemm           dtype        m        n        k  batch    time(us)   TFLOP/s"
         "  check\n";
}

void PrintGemmRow(const GemmRow& g, std::ostream& out) {
  char buf[200];
  std::snprintf(buf, sizeof(buf), "   %-14s %-5s %8lld %8lld %8lld %6lld %11s %9s  %s\n",
                g.name.empty() ? "-" : g.name.c_str(), g.dtype.c_str(), static_cast<long long>(g.m),
                static_cast<long long>(g.n), static_cast<long long>(g.k),
                static_cast<long long>(g.batch), Fmt("%.2f", g.time_s * 1e6).c_str(),
                Fmt("%.1f", g.tflops).c_str(), g.checked ? "OK" : "-");
  out << buf;
}

}  // namespace trainsim::comm::nccl
