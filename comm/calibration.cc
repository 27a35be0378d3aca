#include "comm/calibration.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "sim/read_at_most.h"

namespace trainsim::comm {
namespace {

using Json = nlohmann::json;

template <size_t N>
bool InList(std::string_view s, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

template <size_t N>
std::string JoinList(const std::string_view (&list)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i) out += ", ";
    out += list[i];
  }
  return out;
}

const char* TypeName(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

// A short rendering of a value for messages: scalars as JSON (strings cut at 40 characters),
// containers by type only (dumping them is recursive and unbounded).
std::string Brief(const Json& j) {
  if (j.is_structured()) return TypeName(j);
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s.size() > 40)
      return Json(s.substr(0, 40)).dump(-1, ' ', false, Json::error_handler_t::replace) + "...";
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Reads the fields of one JSON object, reporting errors by field path. Unknown keys are errors:
// a misspelt field must not silently fall back to a default.
class ObjectReader {
 public:
  ObjectReader(const Json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  Status CheckKeys(std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : obj_.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string valid;
        for (std::string_view a : allowed) {
          if (!valid.empty()) valid += ", ";
          valid += a;
        }
        return Status::InvalidArgument(Field(key) + ": unknown field (valid: " + valid + ")");
      }
    }
    return Status::Ok();
  }

  // A non-empty string; `one_line` (labels that are printed: names, versions, dates) refuses
  // control characters, which free text (a note, a source) may hold.
  Result<std::string> String(const std::string& key, bool one_line = true) const {
    const Json* j = Find(key);
    if (!j) return Missing(key, "a string");
    if (!j->is_string()) return WrongType(key, *j, "a string");
    const std::string& s = j->get_ref<const std::string&>();
    if (s.empty()) return Status::InvalidArgument(Field(key) + ": must not be empty");
    for (size_t i = 0; one_line && i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x20 || c == 0x7f) {
        char code[8];
        std::snprintf(code, sizeof code, "U+%04X", c);
        return Status::InvalidArgument(Field(key) + ": control character " + code +
                                       " at character " + std::to_string(i) +
                                       "; expected one line of printable text");
      }
    }
    return s;
  }

  // An integer in [lo, hi]; a float with an integral value (1e6) is accepted.
  Result<int64_t> Int(const std::string& key, int64_t lo, int64_t hi,
                      std::optional<int64_t> dflt = std::nullopt) const {
    const Json* j = Find(key);
    if (!j) {
      if (dflt) return *dflt;
      return Missing(key, "an integer");
    }
    double v;
    if (j->is_number_integer()) {
      if (j->is_number_unsigned() &&
          j->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return OutOfRangeInt(key, lo, hi);
      }
      int64_t i = j->get<int64_t>();
      if (i < lo || i > hi) return OutOfRangeInt(key, lo, hi);
      return i;
    }
    if (!j->is_number_float()) return WrongType(key, *j, "an integer");
    v = j->get<double>();
    if (!std::isfinite(v) || v != std::floor(v)) return WrongType(key, *j, "an integer");
    if (v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
      return OutOfRangeInt(key, lo, hi);
    }
    return static_cast<int64_t>(v);
  }

  // A finite number > 0 (or >= 0 when allow_zero).
  Result<double> Positive(const std::string& key, bool allow_zero) const {
    const Json* j = Find(key);
    if (!j) return Missing(key, "a number");
    if (!j->is_number()) return WrongType(key, *j, "a number");
    double v = j->get<double>();
    if (!std::isfinite(v) || v < 0 || (!allow_zero && v == 0)) {
      std::ostringstream os;
      os << Field(key) << ": " << v << " is not valid; expected a finite number "
         << (allow_zero ? ">= 0" : "> 0");
      return Status::InvalidArgument(os.str());
    }
    return v;
  }

  Result<bool> Bool(const std::string& key, bool dflt) const {
    const Json* j = Find(key);
    if (!j) return dflt;
    if (!j->is_boolean()) return WrongType(key, *j, "true or false");
    return j->get<bool>();
  }

  const Json* Find(const std::string& key) const {
    auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }
  std::string Field(std::string_view key) const {
    return where_.empty() ? std::string(key) : where_ + "." + std::string(key);
  }

 private:
  Status Missing(const std::string& key, const char* what) const {
    return Status::InvalidArgument(Field(key) + ": missing field (expected " + what + ")");
  }
  Status WrongType(const std::string& key, const Json& j, const char* what) const {
    return Status::InvalidArgument(Field(key) + ": expected " + what + ", got " + TypeName(j) +
                                   (j.is_structured() ? "" : " (" + Brief(j) + ")"));
  }
  Status OutOfRangeInt(const std::string& key, int64_t lo, int64_t hi) const {
    return Status::InvalidArgument(Field(key) + ": " + Brief(*Find(key)) +
                                   " is out of range; expected an integer in [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }

  const Json& obj_;
  std::string where_;
};

// 1-based line and column of a byte offset, for nlohmann's parse_error::byte (the 1-based
// position of the byte where parsing stopped).
std::pair<int, int> LineColumn(std::string_view text, size_t byte) {
  int line = 1, col = 1;
  size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1,
// column 5: " (we give our own position) or "[json.exception.out_of_range.406] "; keep only the
// explanation.
std::string ParseErrorReason(const std::string& what) {
  size_t pos = what.find("syntax error");
  if (pos != std::string::npos) return what.substr(pos);
  if (what.rfind("[json.exception.", 0) == 0 && (pos = what.find("] ")) != std::string::npos) {
    std::string rest = what.substr(pos + 2);
    size_t colon = rest.find(": ");
    if (rest.rfind("parse error", 0) == 0 && colon != std::string::npos) {
      return rest.substr(colon + 2);
    }
    return rest;
  }
  return what;
}

constexpr int64_t kMaxBytes = int64_t{1} << 50;  // 1 PiB: far beyond any single collective
constexpr int64_t kMaxDim = int64_t{1} << 24;    // 16M: beyond any layer dimension in use
constexpr int kMaxRanks = 1 << 20;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Alphanumeric words of a name, lower case: "NVIDIA H100 80GB HBM3" -> nvidia, h100, 80gb, hbm3.
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

// The GPU model word: letters then digits then optional letters ("h100", "a100", "l40s",
// "gb200"), as opposed to vendor names and capacities ("nvidia", "80gb").
std::optional<std::string> ModelWord(std::string_view name) {
  for (const std::string& w : Words(name)) {
    size_t i = 0;
    while (i < w.size() && std::isalpha(static_cast<unsigned char>(w[i]))) ++i;
    size_t letters = i;
    while (i < w.size() && std::isdigit(static_cast<unsigned char>(w[i]))) ++i;
    if (letters > 0 && i > letters) return w;
  }
  return std::nullopt;
}

Result<CollectiveSample> ReadCollective(const Json& row, const std::string& where) {
  if (!row.is_object()) {
    return Status::InvalidArgument(where + ": expected an object, got " + TypeName(row));
  }
  ObjectReader r(row, where);
  TRAINSIM_RETURN_IF_ERROR(r.CheckKeys(
      {"op", "algo", "nranks", "nodes", "size_bytes", "time_s", "busbw_GBps", "algbw_GBps"}));
  CollectiveSample s;
  auto op = r.String("op");
  if (!op.ok()) return op.status();
  if (!InList(*op, kCalibOps)) {
    return Status::InvalidArgument(r.Field("op") + ": unknown collective \"" + *op +
                                   "\" (valid: " + JoinList(kCalibOps) + ")");
  }
  auto algo = r.String("algo");
  if (!algo.ok()) return algo.status();
  if (!InList(*algo, kCalibAlgos)) {
    return Status::InvalidArgument(r.Field("algo") + ": unknown algorithm \"" + *algo +
                                   "\" (valid: " + JoinList(kCalibAlgos) + ")");
  }
  const bool direct_op = *op == "send_recv" || *op == "all_to_all";
  if (direct_op != (*algo == "direct")) {
    return Status::InvalidArgument(r.Field("algo") +
                                   ": send_recv and all_to_all use algo \"direct\", and "
                                   "\"direct\" is only for them (got op \"" +
                                   *op + "\", algo \"" + *algo + "\")");
  }
  auto nranks = r.Int("nranks", 1, kMaxRanks);
  if (!nranks.ok()) return nranks.status();
  auto nodes = r.Int("nodes", 1, kMaxRanks, /*dflt=*/1);
  if (!nodes.ok()) return nodes.status();
  if (*nodes > *nranks) {
    return Status::InvalidArgument(r.Field("nodes") + ": " + std::to_string(*nodes) +
                                   " nodes for " + std::to_string(*nranks) +
                                   " ranks; a node holds at least one rank");
  }
  auto size = r.Int("size_bytes", 1, kMaxBytes);
  if (!size.ok()) return size.status();
  auto time = r.Positive("time_s", /*allow_zero=*/false);
  if (!time.ok()) return time.status();
  if (!sim::Time::FromSecondsChecked(*time)) {
    return Status::InvalidArgument(r.Field("time_s") + ": too large");
  }
  // Below the simulator's 1 ns resolution the time would round to zero: a collective that takes
  // no time. Real ones take microseconds (NCCL's launch alone is a few); found by fuzzing.
  if (*time < 1e-9) {
    std::ostringstream os;
    os << r.Field("time_s") << ": " << *time
       << " s is below 1 ns, the simulator's resolution (a measured collective takes "
          "microseconds)";
    return Status::InvalidArgument(os.str());
  }
  auto busbw = r.Positive("busbw_GBps", /*allow_zero=*/true);
  if (!busbw.ok()) return busbw.status();
  if (r.Find("algbw_GBps")) {
    auto algbw = r.Positive("algbw_GBps", /*allow_zero=*/true);
    if (!algbw.ok()) return algbw.status();
  }
  s.op = *op;
  s.algo = *algo;
  s.nranks = static_cast<int>(*nranks);
  s.nodes = static_cast<int>(*nodes);
  s.size_bytes = *size;
  s.time_s = *time;
  s.busbw_GBps = *busbw;
  return s;
}

Result<GemmSample> ReadGemm(const Json& row, const std::string& where) {
  if (!row.is_object()) {
    return Status::InvalidArgument(where + ": expected an object, got " + TypeName(row));
  }
  ObjectReader r(row, where);
  TRAINSIM_RETURN_IF_ERROR(
      r.CheckKeys({"dtype", "m", "n", "k", "batch", "tflops", "time_s", "name"}));
  GemmSample g;
  auto dtype = r.String("dtype");
  if (!dtype.ok()) return dtype.status();
  if (!InList(*dtype, kCalibDtypes)) {
    return Status::InvalidArgument(r.Field("dtype") + ": unknown type \"" + *dtype +
                                   "\" (valid: " + JoinList(kCalibDtypes) + ")");
  }
  int64_t* dims[] = {&g.m, &g.n, &g.k};
  const char* names[] = {"m", "n", "k"};
  for (int i = 0; i < 3; ++i) {
    auto v = r.Int(names[i], 1, kMaxDim);
    if (!v.ok()) return v.status();
    *dims[i] = *v;
  }
  auto batch = r.Int("batch", 1, kMaxDim, /*dflt=*/1);
  if (!batch.ok()) return batch.status();
  auto tflops = r.Positive("tflops", /*allow_zero=*/false);
  if (!tflops.ok()) return tflops.status();
  if (r.Find("time_s")) {
    auto t = r.Positive("time_s", /*allow_zero=*/false);
    if (!t.ok()) return t.status();
  }
  if (r.Find("name")) {
    auto n = r.String("name");
    if (!n.ok()) return n.status();
  }
  g.dtype = *dtype;
  g.batch = *batch;
  g.tflops = *tflops;
  return g;
}

}  // namespace

Result<Calibration> ParseCalibration(std::string_view text, const std::string& path) {
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    auto [line, col] = LineColumn(text, e.byte);
    return Status::InvalidArgument(path + ":" + std::to_string(line) + ":" + std::to_string(col) +
                                   ": not valid JSON: " + ParseErrorReason(e.what()));
  } catch (const Json::exception& e) {
    // E.g. out_of_range 406, a number too large for a double: nlohmann gives no position.
    return Status::InvalidArgument(path + ": not valid JSON: " + ParseErrorReason(e.what()));
  }
  // The checks below only read values whose type they have tested; the catch is a safety net
  // so that no JSON input can end the process.
  try {
    auto fail = [&](const Status& st) { return st.WithPrefix(path); };
    if (!doc.is_object()) {
      return fail(Status::InvalidArgument(
          std::string("expected a JSON object at the top level, got ") + TypeName(doc)));
    }
    ObjectReader top(doc, "");
    Status st = top.CheckKeys({"format", "version", "sample", "note", "source", "gpu_name",
                               "gpu_count", "compute_capability", "nccl_version", "cuda_version",
                               "driver_version", "date", "collectives", "gemm"});
    if (!st.ok()) return fail(st);
    if (const Json* f = top.Find("format")) {
      if (!f->is_string() || f->get<std::string>() != "trainsim-calibration") {
        return fail(
            Status::InvalidArgument("format: expected \"trainsim-calibration\", got " + Brief(*f)));
      }
    }
    if (top.Find("version")) {
      auto v = top.Int("version", 1, 1);
      if (!v.ok()) return fail(v.status());
    }
    // Free text (a note, a source) may span lines; the versions are labels.
    for (auto [opt, one_line] :
         {std::pair{"note", false}, std::pair{"source", false},
          std::pair{"compute_capability", true}, std::pair{"driver_version", true}}) {
      if (top.Find(opt)) {
        auto s = top.String(opt, one_line);
        if (!s.ok()) return fail(s.status());
      }
    }

    Calibration c;
    c.path_ = path;
    auto sample = top.Bool("sample", false);
    if (!sample.ok()) return fail(sample.status());
    c.sample_ = *sample;
    auto gpu = top.String("gpu_name");
    if (!gpu.ok()) return fail(gpu.status());
    c.gpu_name_ = *gpu;
    auto count = top.Int("gpu_count", 1, kMaxRanks);
    if (!count.ok()) return fail(count.status());
    c.gpu_count_ = static_cast<int>(*count);
    for (auto [key, dst] : {std::pair<const char*, std::string*>{"nccl_version", &c.nccl_version_},
                            {"cuda_version", &c.cuda_version_},
                            {"date", &c.date_}}) {
      auto s = top.String(key);
      if (!s.ok()) return fail(s.status());
      *dst = *s;
    }

    const Json* colls = top.Find("collectives");
    if (!colls)
      return fail(Status::InvalidArgument("collectives: missing field (expected an array)"));
    if (!colls->is_array()) {
      return fail(Status::InvalidArgument(std::string("collectives: expected an array, got ") +
                                          TypeName(*colls)));
    }
    std::set<std::tuple<std::string, std::string, int, int, int64_t>> seen;
    for (size_t i = 0; i < colls->size(); ++i) {
      std::string where = "collectives[" + std::to_string(i) + "]";
      auto row = ReadCollective((*colls)[i], where);
      if (!row.ok()) return fail(row.status());
      if (row->nranks > c.gpu_count_) {
        return fail(Status::InvalidArgument(
            where + ".nranks: " + std::to_string(row->nranks) + " ranks but gpu_count is " +
            std::to_string(c.gpu_count_) + " (a measurement cannot use more GPUs than it had)"));
      }
      if (!seen.emplace(row->op, row->algo, row->nranks, row->nodes, row->size_bytes).second) {
        return fail(Status::InvalidArgument(
            where + ": duplicate row for " + row->op + "/" + row->algo + " on " +
            std::to_string(row->nranks) + " ranks on " + std::to_string(row->nodes) +
            " node(s) at " + std::to_string(row->size_bytes) + " bytes"));
      }
      c.collectives_.push_back(std::move(*row));
    }

    const Json* gemm = top.Find("gemm");
    if (!gemm) return fail(Status::InvalidArgument("gemm: missing field (expected an array)"));
    if (!gemm->is_array()) {
      return fail(
          Status::InvalidArgument(std::string("gemm: expected an array, got ") + TypeName(*gemm)));
    }
    std::set<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>> seen_gemm;
    for (size_t i = 0; i < gemm->size(); ++i) {
      std::string where = "gemm[" + std::to_string(i) + "]";
      auto row = ReadGemm((*gemm)[i], where);
      if (!row.ok()) return fail(row.status());
      if (!seen_gemm.emplace(row->dtype, row->m, row->n, row->k, row->batch).second) {
        return fail(Status::InvalidArgument(where + ": duplicate row for " + row->dtype + " " +
                                            std::to_string(row->m) + "x" + std::to_string(row->n) +
                                            "x" + std::to_string(row->k) + " batch " +
                                            std::to_string(row->batch)));
      }
      c.gemms_.push_back(std::move(*row));
    }
    if (c.collectives_.empty() && c.gemms_.empty()) {
      return fail(Status::InvalidArgument(
          "collectives and gemm are both empty: the file calibrates nothing"));
    }
    return c;
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(path + ": " + ParseErrorReason(e.what()));
  }
}

// A calibration from `trainsim calibrate` is tens of KiB (a few hundred rows); 16 MiB, the
// scenario file's limit, leaves room for hand-merged ones and bounds memory for a wrong path.
constexpr size_t kMaxCalibrationBytes = size_t{16} << 20;

Result<Calibration> LoadCalibration(const std::string& path) {
  // Checked before opening: opening a FIFO blocks until a writer comes, /dev/zero never ends.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    return Status::InvalidArgument(path +
                                   ": not a regular file (a calibration is a JSON file written "
                                   "by `trainsim calibrate`)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open calibration file");
  const BoundedRead read = ReadAtMost(in, kMaxCalibrationBytes);
  if (read.failed) return Status::NotFound(path + ": cannot read calibration file");
  const std::string& body = read.body;
  if (read.too_large) {
    return Status::InvalidArgument(path + ": larger than " +
                                   std::to_string(kMaxCalibrationBytes >> 20) +
                                   " MiB; a calibration file is tens of KiB");
  }
  return ParseCalibration(body, path);
}

std::optional<sim::Time> Calibration::CollectiveTime(Op op, Algo algo, int nranks, int64_t bytes,
                                                     int nodes) const {
  // Spelled out here rather than through comm::OpName so the loader does not depend on the
  // collective models' object files; the names are the same.
  std::string_view op_name;
  switch (op) {
    case Op::kAllReduce:
      op_name = "all_reduce";
      break;
    case Op::kReduceScatter:
      op_name = "reduce_scatter";
      break;
    case Op::kAllGather:
      op_name = "all_gather";
      break;
    case Op::kBroadcast:
      op_name = "broadcast";
      break;
    case Op::kAllToAll:
      op_name = "all_to_all";
      break;
    case Op::kSendRecv:
      op_name = "send_recv";
      break;
  }
  std::string_view algo_name;
  switch (algo) {
    case Algo::kRing:
      algo_name = "ring";
      break;
    case Algo::kTree:
      algo_name = "tree";
      break;
    case Algo::kDirect:
      algo_name = "direct";
      break;
    case Algo::kAuto:
    case Algo::kHierarchical:
    case Algo::kNvls:
    case Algo::kNvlsTree:
    case Algo::kCollNet:
    case Algo::kPat:
      return std::nullopt;
  }
  return CollectiveTime(op_name, algo_name, nranks, bytes, nodes);
}

bool Calibration::HasCollective(std::string_view op, std::string_view algo, int nranks,
                                int nodes) const {
  return std::any_of(collectives_.begin(), collectives_.end(), [&](const CollectiveSample& s) {
    return s.op == op && s.algo == algo && s.nranks == nranks && s.nodes == nodes;
  });
}

std::optional<sim::Time> Calibration::CollectiveTime(std::string_view op, std::string_view algo,
                                                     int nranks, int64_t bytes, int nodes) const {
  if (bytes <= 0) return std::nullopt;
  // Nearest measured size at or below `bytes` and at or above it on this curve.
  const CollectiveSample* lo = nullptr;
  const CollectiveSample* hi = nullptr;
  for (const CollectiveSample& s : collectives_) {
    if (s.op != op || s.algo != algo || s.nranks != nranks || s.nodes != nodes) continue;
    if (s.size_bytes <= bytes && (!lo || s.size_bytes > lo->size_bytes)) lo = &s;
    if (s.size_bytes >= bytes && (!hi || s.size_bytes < hi->size_bytes)) hi = &s;
  }
  if (!lo || !hi) return std::nullopt;
  double t;
  if (lo->size_bytes == hi->size_bytes) {
    t = lo->time_s;
  } else {
    double f = std::log(static_cast<double>(bytes) / static_cast<double>(lo->size_bytes)) /
               std::log(static_cast<double>(hi->size_bytes) / static_cast<double>(lo->size_bytes));
    t = std::exp(std::log(lo->time_s) + f * (std::log(hi->time_s) - std::log(lo->time_s)));
  }
  return sim::Time::FromSecondsChecked(t);
}

std::optional<double> Calibration::GemmTflops(std::string_view dtype, int64_t m, int64_t n,
                                              int64_t k, int64_t batch) const {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return std::nullopt;
  const double kMaxRatio = std::log(2.0) + 1e-12;
  const GemmSample* best = nullptr;
  double best_d = 0;
  for (const GemmSample& g : gemms_) {
    if (g.dtype != dtype) continue;
    double d = 0;
    bool within = true;
    for (auto [a, b] : {std::pair{m, g.m}, {n, g.n}, {k, g.k}, {batch, g.batch}}) {
      double r = std::fabs(std::log(static_cast<double>(a) / static_cast<double>(b)));
      within = within && r <= kMaxRatio;
      d += r;
    }
    if (!within) continue;
    if (!best || d < best_d) {
      best = &g;
      best_d = d;
    }
  }
  if (!best) return std::nullopt;
  return best->tflops;
}

std::optional<double> Calibration::GemmEfficiency(std::string_view dtype, int64_t m, int64_t n,
                                                  int64_t k, int64_t batch,
                                                  double peak_tflops) const {
  if (!(peak_tflops > 0)) return std::nullopt;
  std::optional<double> t = GemmTflops(dtype, m, n, k, batch);
  if (!t) return std::nullopt;
  return *t / peak_tflops;
}

std::string Calibration::Describe() const {
  std::string where = std::to_string(gpu_count_) + " x " + gpu_name_ + ", NCCL " + nccl_version_ +
                      ", CUDA " + cuda_version_;
  if (sample_) return "SAMPLE calibration " + path_ + " (not measured; " + where + ")";
  return "calibration " + path_ + ": measured " + date_ + " on " + where;
}

Result<Calibration> LoadCalibrationFor(const std::string& path, std::string_view scenario_gpu) {
  auto c = LoadCalibration(path);
  if (!c.ok()) return c.status();
  TRAINSIM_RETURN_IF_ERROR(c->CheckGpu(scenario_gpu));
  return c;
}

Status Calibration::CheckGpu(std::string_view scenario_gpu) const {
  std::optional<std::string> want = ModelWord(scenario_gpu);
  bool match;
  if (want) {
    std::vector<std::string> words = Words(gpu_name_);
    match = std::find(words.begin(), words.end(), *want) != words.end();
  } else {
    std::string s = Lower(scenario_gpu);
    match = !s.empty() && Lower(gpu_name_).find(s) != std::string::npos;
  }
  if (match) return Status::Ok();
  return Status::FailedPrecondition(path_ + ": calibration was measured on \"" + gpu_name_ +
                                    "\" but the scenario's GPU is \"" + std::string(scenario_gpu) +
                                    "\"; measure on that GPU (trainsim calibrate) or drop the "
                                    "calibration");
}

Result<CollectiveTiming> EstimateCollectiveCalibrated(const Topology& topology,
                                                      const CollectiveSpec& spec,
                                                      const Calibration* calibration) {
  TRAINSIM_RETURN_IF_ERROR(ValidateCollective(topology, spec));
  if (calibration && spec.bytes <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    const int nodes = topology.NodesSpanned(spec.gpus);
    const std::vector<Algo> candidates =
        spec.algo == Algo::kAuto ? AlgorithmsFor(spec.op) : std::vector<Algo>{spec.algo};
    std::optional<CollectiveTiming> best;
    for (Algo a : candidates) {
      std::optional<sim::Time> t = calibration->CollectiveTime(
          spec.op, a, static_cast<int>(spec.gpus.size()), static_cast<int64_t>(spec.bytes), nodes);
      if (t && (!best || *t < best->time)) best = CollectiveTiming{*t, a, std::nullopt, true};
    }
    if (best) return *best;
  }
  auto model = EstimateCollective(topology, spec);
  if (!model.ok()) return model.status();
  return CollectiveTiming{model->time, model->algo, model->protocol, false};
}

}  // namespace trainsim::comm
