#include "comm/nccl/runner_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

namespace trainsim::comm::nccl {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

// "text" in quotes. (Built by appending: GCC 12 warns falsely (-Wrestrict) on
// "\"" + std::string(...).)
std::string Quote(std::string_view text) {
  std::string s = "\"";
  s += text;
  s += '"';
  return s;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

Status IntInRange(const std::string& opt, std::string_view text, int64_t lo, int64_t hi,
                  int64_t* out) {
  auto v = ParseInt(text);
  if (!v || *v < lo || *v > hi) {
    return Status::InvalidArgument(opt + ": \"" + std::string(text) + "\" is not valid; expected " +
                                   "an integer in [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "]");
  }
  *out = *v;
  return Status::Ok();
}

template <typename F>
Status ListOf(const std::string& opt, std::string_view text,
              std::initializer_list<std::string_view> valid, F&& add) {
  for (std::string_view item : Split(text, ',')) {
    if (std::find(valid.begin(), valid.end(), item) == valid.end()) {
      std::string v;
      for (std::string_view s : valid) v += (v.empty() ? "" : ", ") + std::string(s);
      return Status::InvalidArgument(opt + ": unknown value \"" + std::string(item) +
                                     "\" (valid: " + v + ")");
    }
    add(std::string(item));
  }
  return Status::Ok();
}

std::vector<std::string> Words(std::string_view name) {
  std::vector<std::string> words;
  std::string cur;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      words.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

}  // namespace

Result<int64_t> ParseBytes(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  auto num = ParseInt(text.substr(0, i));
  std::string unit;
  for (char c : text.substr(i))
    unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  if (unit == "K" || unit == "KB" || unit == "KIB") shift = 10;
  if (unit == "M" || unit == "MB" || unit == "MIB") shift = 20;
  if (unit == "G" || unit == "GB" || unit == "GIB") shift = 30;
  if (!num || shift < 0) {
    return Status::InvalidArgument(Quote(text) + " is not a size; expected e.g. 8, 64K, 1M, 1G");
  }
  if (*num > (kMaxCollectiveBytes >> shift)) {
    return Status::OutOfRange(Quote(text) + " is beyond the largest size, 8G");
  }
  return *num << shift;
}

Result<std::vector<GemmSpec>> ParseGemmList(std::string_view text) {
  std::vector<GemmSpec> out;
  for (std::string_view item : Split(text, ',')) {
    GemmSpec g;
    std::string_view dims = item;
    if (size_t eq = item.find('='); eq != std::string_view::npos) {
      g.name = std::string(item.substr(0, eq));
      dims = item.substr(eq + 1);
    }
    std::vector<std::string_view> parts = Split(dims, 'x');
    std::vector<int64_t> v;
    for (std::string_view p : parts) {
      auto x = ParseInt(p);
      if (!x || *x < 1 || *x > kMaxGemmDim) {
        v.clear();
        break;
      }
      v.push_back(*x);
    }
    if (v.size() != 3 && v.size() != 4) {
      return Status::InvalidArgument(
          Quote(item) +
          " is not a GEMM shape; expected MxNxK or MxNxKxBATCH with each in [1, 1048576]");
    }
    g.m = v[0];
    g.n = v[1];
    g.k = v[2];
    g.batch = v.size() == 4 ? v[3] : 1;
    out.push_back(std::move(g));
  }
  return out;
}

Result<RunnerOptions> ParseRunnerArgs(int argc, const char* const* argv) {
  RunnerOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    auto next = [&]() -> Result<std::string> {
      if (has_inline) return value;
      if (i + 1 >= argc) return Status::InvalidArgument(arg + ": missing value");
      return std::string(argv[++i]);
    };
    auto take = [&](std::string* dst) -> Status {
      auto v = next();
      if (!v.ok()) return v.status();
      *dst = *v;
      return Status::Ok();
    };
    std::string v;
    if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "--probe") {
      o.probe = true;
    } else if (arg == "--no-check") {
      o.check = false;
    } else if (arg == "--ops") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      o.ops.clear();
      if (v != "none") {
        TRAINSIM_RETURN_IF_ERROR(
            ListOf(arg, v, {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "send_recv"},
                   [&](std::string s) {
                     if (std::find(o.ops.begin(), o.ops.end(), s) == o.ops.end())
                       o.ops.push_back(s);
                   }));
      }
    } else if (arg == "--algos") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      o.algos.clear();
      TRAINSIM_RETURN_IF_ERROR(ListOf(arg, v, {"ring", "tree"}, [&](std::string s) {
        if (std::find(o.algos.begin(), o.algos.end(), s) == o.algos.end()) o.algos.push_back(s);
      }));
    } else if (arg == "-b" || arg == "--min-bytes" || arg == "-e" || arg == "--max-bytes") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      auto b = ParseBytes(v);
      if (!b.ok()) return b.status().WithPrefix(arg);
      if (*b < 1) return Status::InvalidArgument(arg + ": sizes start at 1 byte");
      (arg == "-b" || arg == "--min-bytes" ? o.min_bytes : o.max_bytes) = *b;
    } else if (arg == "-f" || arg == "--step-factor") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      TRAINSIM_RETURN_IF_ERROR(IntInRange(arg, v, 2, 1024, &o.step_factor));
    } else if (arg == "--nranks") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      o.nranks.clear();
      for (std::string_view item : Split(v, ',')) {
        int64_t n;
        TRAINSIM_RETURN_IF_ERROR(IntInRange(arg, item, 1, 1 << 16, &n));
        o.nranks.push_back(static_cast<int>(n));
      }
    } else if (arg == "-w" || arg == "--warmup" || arg == "-r" || arg == "--repeats" ||
               arg == "-n" || arg == "--iters") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      int64_t n;
      bool warm = arg == "-w" || arg == "--warmup";
      bool iters = arg == "-n" || arg == "--iters";
      TRAINSIM_RETURN_IF_ERROR(IntInRange(arg, v, warm || iters ? 0 : 1, 1000, &n));
      (warm ? o.warmup : iters ? o.iters : o.repeats) = static_cast<int>(n);
    } else if (arg == "--gemm") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      auto g = ParseGemmList(v);
      if (!g.ok()) return g.status().WithPrefix(arg);
      o.gemms.insert(o.gemms.end(), g->begin(), g->end());
    } else if (arg == "--dtypes") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      o.dtypes.clear();
      TRAINSIM_RETURN_IF_ERROR(ListOf(arg, v, {"bf16", "fp16", "fp8"}, [&](std::string s) {
        if (std::find(o.dtypes.begin(), o.dtypes.end(), s) == o.dtypes.end()) o.dtypes.push_back(s);
      }));
    } else if (arg == "--expect-gpu") {
      TRAINSIM_RETURN_IF_ERROR(take(&o.expect_gpu));
    } else if (arg == "-o" || arg == "--output") {
      TRAINSIM_RETURN_IF_ERROR(take(&o.output));
      if (o.output.empty()) return Status::InvalidArgument(arg + ": empty path");
    } else if (arg == "--timeout-s" || arg == "--deadline-s") {
      TRAINSIM_RETURN_IF_ERROR(take(&v));
      auto d = ParseDouble(v);
      if (!d || *d <= 0 || *d > 86400) {
        return Status::InvalidArgument(arg + ": \"" + v +
                                       "\" is not valid; expected seconds in (0, 86400]");
      }
      (arg == "--timeout-s" ? o.timeout_s : o.deadline_s) = *d;
    } else {
      return Status::InvalidArgument("unknown argument \"" + arg + "\" (see --help)");
    }
  }
  if (o.min_bytes > o.max_bytes) {
    return Status::InvalidArgument("--min-bytes (" + std::to_string(o.min_bytes) +
                                   ") is larger than --max-bytes (" + std::to_string(o.max_bytes) +
                                   ")");
  }
  return o;
}

std::vector<int64_t> SizeLadder(const RunnerOptions& o) {
  std::vector<int64_t> sizes;
  for (int64_t s = o.min_bytes; s <= o.max_bytes; s *= o.step_factor) {
    sizes.push_back(s);
    if (s > o.max_bytes / o.step_factor) break;
  }
  return sizes;
}

int ItersFor(const RunnerOptions& o, int64_t bytes) {
  if (o.iters > 0) return o.iters;
  // Small collectives are a few microseconds: batch them so the event resolution (~0.5 us) and
  // launch jitter stay small against the batch; large ones are long enough alone.
  if (bytes <= (int64_t{1} << 20)) return 20;
  if (bytes <= (int64_t{64} << 20)) return 5;
  return 1;
}

bool GpuNameMatches(std::string_view device_name, std::string_view wanted) {
  std::vector<std::string> dev = Words(device_name);
  for (const std::string& w : Words(wanted)) {
    size_t i = 0;
    while (i < w.size() && std::isalpha(static_cast<unsigned char>(w[i]))) ++i;
    size_t letters = i;
    while (i < w.size() && std::isdigit(static_cast<unsigned char>(w[i]))) ++i;
    if (letters > 0 && i > letters) return std::find(dev.begin(), dev.end(), w) != dev.end();
  }
  std::string d(device_name), x(wanted);
  for (char& c : d) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !x.empty() && d.find(x) != std::string::npos;
}

std::string RunnerUsage() {
  return R"(trainsim-nccl-calibrate: measure NCCL collectives and cuBLASLt matrix products on the
GPUs of this machine and write a trainsim calibration file.

Usage: trainsim-nccl-calibrate [options]
  One process drives every visible GPU (one NCCL rank each), or run one process per GPU under
  mpirun (when built with MPI): ranks exchange the NCCL id over MPI.

Collectives (sizes as nccl-tests: -b 8 -e 1G -f 2):
  --ops LIST          all_reduce,reduce_scatter,all_gather,broadcast,send_recv (default all;
                      "none" for GEMMs only)
  --algos LIST        NCCL_ALGO for all_reduce: ring,tree (default both; one communicator each)
  -b, --min-bytes N   smallest size (default 8)
  -e, --max-bytes N   largest size (default 1G; at most 8G)
  -f, --step-factor F size multiplier (default 2)
  --nranks LIST       group sizes to measure, e.g. 2,4,8 (default: all GPUs)
  -w, --warmup N      untimed calls per size (default 5)
  -r, --repeats N     timed batches per size; the median is reported (default 5)
  -n, --iters N       calls per timed batch (default by size: 20 to 1M, 5 to 64M, then 1)
  --no-check          skip the result check (default: every size is checked on the host)
Matrix products (cuBLASLt, TN layout, FP32 accumulation):
  --gemm LIST         shapes MxNxK or MxNxKxBATCH, optionally name=MxNxK, comma-separated
  --dtypes LIST       bf16,fp16,fp8 (default bf16,fp8; fp8 needs compute capability 8.9+)
Output and limits:
  -o, --output FILE   write the calibration JSON here
  --expect-gpu NAME   fail unless the GPUs are this type (e.g. H100-SXM-80GB)
  --timeout-s S       limit for one collective or GEMM batch (default 60); the NCCL
                      communicator is aborted and the run fails with exit code 2
  --deadline-s S      limit for the whole run (default 1800)
  --probe             list the GPUs; exit 0 when there is one, 2 otherwise
Exit codes: 0 done, 2 bad input, no GPU, CUDA/NCCL/cuBLAS error, wrong result or timeout.
)";
}

}  // namespace trainsim::comm::nccl
