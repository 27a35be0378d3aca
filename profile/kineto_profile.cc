#include "profile/kineto_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/json_reason.h"

namespace trainsim::profile {
namespace {

using nlohmann::json;

// A trace larger than this is refused before it is read whole (a day of kernels on one GPU is
// well under it; the JSON tree takes several times the text).
constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t(2) << 30;

std::string Lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

struct Event {
  double ts = 0, dur = 0;
  std::string name;
  std::string cat;
  std::string pid, tid;  // as text: Kineto writes GPU pids as numbers and CPU tids as numbers
  int device = -1;       // args.device of a kernel
};

std::string IdText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return std::to_string(v.get<double>());
  return "";
}

Status Bad(const std::string& path, const std::string& what) {
  return Status::InvalidArgument("--profile " + path + ": " + what);
}

// ProfilerStep#N → N, or -1.
int StepNumber(const std::string& name) {
  static const std::string kPrefix = "ProfilerStep#";
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) return -1;
  int n = 0;
  for (size_t i = kPrefix.size(); i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])) || n > 100000000) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

bool IsKernel(const std::string& cat) {
  const std::string c = Lower(cat);
  return c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset";
}

// The union length of intervals (sorted by start) clipped to [lo, hi).
double UnionLength(std::vector<std::pair<double, double>> iv, double lo, double hi) {
  std::sort(iv.begin(), iv.end());
  double total = 0, cur_s = 0, cur_e = -1;
  bool open = false;
  for (auto [s, e] : iv) {
    s = std::max(s, lo);
    e = std::min(e, hi);
    if (e <= s) continue;
    if (open && s <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (open) total += cur_e - cur_s;
    cur_s = s;
    cur_e = e;
    open = true;
  }
  if (open) total += cur_e - cur_s;
  return total;
}

Result<std::vector<Event>> ReadEvents(const std::string& text, const std::string& path) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return Bad(path, "not JSON (" + JsonReason(e.what()) +
                         "); give the Chrome trace torch.profiler's export_chrome_trace or "
                         "tensorboard_trace_handler writes");
  }
  const json* list = nullptr;
  if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) {
    list = &doc["traceEvents"];
  } else if (doc.is_array()) {
    list = &doc;
  } else {
    return Bad(path,
               "not a Chrome trace: expected an object with a \"traceEvents\" array (or an "
               "array of events)");
  }
  std::vector<Event> events;
  for (const json& e : *list) {
    if (!e.is_object()) continue;
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || ph->get<std::string>() != "X") continue;
    auto ts = e.find("ts");
    auto dur = e.find("dur");
    auto name = e.find("name");
    if (name == e.end() || !name->is_string()) continue;
    // A step annotation sets what every kernel is counted against: one without a start or a
    // positive duration is a broken trace, not a step of zero length (which would report every
    // group as 0 ms and exit 0).
    if (const int n = StepNumber(name->get<std::string>()); n >= 0) {
      const bool ts_ok = ts != e.end() && ts->is_number() && std::isfinite(ts->get<double>());
      const bool dur_ok = dur != e.end() && dur->is_number() && std::isfinite(dur->get<double>()) &&
                          dur->get<double>() > 0;
      if (!ts_ok || !dur_ok) {
        return Bad(
            path,
            name->get<std::string>() + " has " +
                (!ts_ok ? "\"ts\": " + (ts == e.end() ? std::string("none") : ts->dump())
                        : "\"dur\": " + (dur == e.end() ? std::string("none") : dur->dump())) +
                "; a step annotation needs a start and a positive duration in "
                "microseconds (numbers), as torch.profiler writes them");
      }
    }
    if (ts == e.end() || !ts->is_number()) continue;
    Event ev;
    ev.ts = ts->get<double>();
    ev.dur = dur != e.end() && dur->is_number() ? std::max(0.0, dur->get<double>()) : 0.0;
    ev.name = name->get<std::string>();
    if (auto c = e.find("cat"); c != e.end() && c->is_string()) ev.cat = c->get<std::string>();
    if (auto p = e.find("pid"); p != e.end()) ev.pid = IdText(*p);
    if (auto t = e.find("tid"); t != e.end()) ev.tid = IdText(*t);
    if (auto a = e.find("args"); a != e.end() && a->is_object()) {
      if (auto d = a->find("device"); d != a->end() && d->is_number_integer()) {
        ev.device = d->get<int>();
      }
    }
    if (!std::isfinite(ev.ts) || !std::isfinite(ev.dur)) continue;
    events.push_back(std::move(ev));
  }
  return events;
}

// CPU work: operators and record_function ranges (Kineto's "cpu_op" and "user_annotation";
// the legacy profiler's export has no category), not the step annotations themselves.
bool IsCpuWork(const Event& e) {
  const std::string c = Lower(e.cat);
  return (c.empty() || c == "cpu_op" || c == "user_annotation") && StepNumber(e.name) < 0;
}

// The top-level CPU work events of each thread (not nested inside another of the same thread).
std::vector<const Event*> TopLevelCpuOps(const std::vector<Event>& events) {
  std::map<std::pair<std::string, std::string>, std::vector<const Event*>> by_thread;
  for (const Event& e : events) {
    if (IsCpuWork(e)) by_thread[{e.pid, e.tid}].push_back(&e);
  }
  std::vector<const Event*> out;
  for (auto& [thread, list] : by_thread) {
    std::stable_sort(list.begin(), list.end(), [](const Event* a, const Event* b) {
      return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur;
    });
    double end = -1e300;
    for (const Event* e : list) {
      if (e->ts >= end) {
        out.push_back(e);
        end = e->ts + e->dur;
      }
    }
  }
  return out;
}

}  // namespace

const char* GroupName(KernelGroup g) {
  switch (g) {
    case KernelGroup::kGemm:
      return "gemm";
    case KernelGroup::kAttention:
      return "attention";
    case KernelGroup::kNccl:
      return "nccl";
    case KernelGroup::kOther:
      return "other";
  }
  return "other";
}

KernelGroup ClassifyKernel(const std::string& raw) {
  const std::string n = Lower(raw);
  for (const char* p : {"nccl", "allreduce", "all_reduce", "all_gather", "allgather",
                        "reduce_scatter", "reducescatter", "c10d::", "alltoall"}) {
    if (Has(n, p)) return KernelGroup::kNccl;
  }
  for (const char* p : {"flash", "fmha", "attention", "scaled_dot_product"}) {
    if (Has(n, p)) return KernelGroup::kAttention;
  }
  for (const char* p : {"gemm", "cublas", "cutlass", "xmma", "aten::mm", "aten::addmm", "aten::bmm",
                        "aten::linear", "aten::matmul", "mmbackward"}) {
    if (Has(n, p)) return KernelGroup::kGemm;
  }
  return KernelGroup::kOther;
}

double Profile::mean_step_us() const {
  double t = 0;
  for (const ProfileStep& s : steps) t += s.duration_us;
  return steps.empty() ? 0.0 : t / double(steps.size());
}

double Profile::mean_group_us(KernelGroup g) const {
  double t = 0;
  for (const ProfileStep& s : steps) t += s.group_us[int(g)];
  return steps.empty() ? 0.0 : t / double(steps.size());
}

double Profile::mean_idle_us() const {
  double t = 0;
  for (const ProfileStep& s : steps) t += s.idle_us();
  return steps.empty() ? 0.0 : t / double(steps.size());
}

double Profile::idle_share() const {
  const double step = mean_step_us();
  return step > 0 ? mean_idle_us() / step : 0.0;
}

Result<Profile> ParseKinetoTrace(const std::string& text, const std::string& path) {
  Result<std::vector<Event>> read = ReadEvents(text, path);
  if (!read.ok()) return read.status();
  const std::vector<Event>& events = *read;
  Profile prof;
  prof.path = path;

  std::vector<const Event*> kernels;
  std::set<int> devices;
  for (const Event& e : events) {
    if (!IsKernel(e.cat)) continue;
    kernels.push_back(&e);
    if (e.device >= 0) devices.insert(e.device);
  }
  if (devices.size() > 1) {
    return Bad(path, "mixes ranks: kernels on " + std::to_string(devices.size()) + " devices (" +
                         std::to_string(*devices.begin()) + " and " +
                         std::to_string(*devices.rbegin()) +
                         "); profile one rank per file (tensorboard_trace_handler writes one "
                         "per rank)");
  }
  prof.gpu = !kernels.empty();
  if (!prof.gpu) kernels = TopLevelCpuOps(events);

  // Steps: the GPU-side annotations of a GPU trace when it has them, else the CPU ones.
  std::vector<const Event*> gpu_marks, cpu_marks;
  for (const Event& e : events) {
    if (StepNumber(e.name) < 0) continue;
    (Lower(e.cat) == "gpu_user_annotation" ? gpu_marks : cpu_marks).push_back(&e);
  }
  std::vector<const Event*>& marks = prof.gpu && !gpu_marks.empty() ? gpu_marks : cpu_marks;
  if (marks.empty()) {
    return Bad(path,
               "no steps: the trace has no ProfilerStep#N annotations; profile with "
               "torch.profiler.profile(schedule=...) and call prof.step() once per iteration");
  }
  std::sort(marks.begin(), marks.end(),
            [](const Event* a, const Event* b) { return a->ts < b->ts; });
  std::set<int> seen;
  for (const Event* m : marks) {
    if (!seen.insert(StepNumber(m->name)).second) {
      return Bad(path, "mixes ranks: " + m->name +
                           " appears more than once (traces of several ranks merged?); profile "
                           "one rank per file");
    }
  }
  for (const Event* m : marks) {
    ProfileStep s;
    s.number = StepNumber(m->name);
    s.start_us = m->ts;
    s.duration_us = m->dur;
    prof.steps.push_back(s);
  }
  // Each event to the step its start falls in.
  std::vector<std::vector<std::pair<double, double>>> intervals(prof.steps.size());
  for (const Event* k : kernels) {
    auto it = std::upper_bound(prof.steps.begin(), prof.steps.end(), k->ts,
                               [](double ts, const ProfileStep& s) { return ts < s.start_us; });
    if (it == prof.steps.begin()) continue;
    --it;
    const double end = it->start_us + it->duration_us;
    if (k->ts >= end) continue;
    const size_t i = size_t(it - prof.steps.begin());
    it->events++;
    it->group_us[int(ClassifyKernel(k->name))] += std::min(k->ts + k->dur, end) - k->ts;
    intervals[i].push_back({k->ts, k->ts + k->dur});
  }
  for (size_t i = 0; i < prof.steps.size(); ++i) {
    ProfileStep& s = prof.steps[i];
    s.busy_us = UnionLength(intervals[i], s.start_us, s.start_us + s.duration_us);
  }
  // Work recorded, none of it inside a step: the steps' times are not the kernels' (a clock
  // mismatch or an edited trace), and every step would read as idle.
  int inside = 0;
  for (const ProfileStep& s : prof.steps) inside += s.events;
  if (inside == 0 && !kernels.empty()) {
    double first = kernels.front()->ts;
    for (const Event* k : kernels) first = std::min(first, k->ts);
    auto us = [](double v) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      return std::string(buf);
    };
    return Bad(path, "none of its " + std::to_string(kernels.size()) + " " +
                         (prof.gpu ? "kernels" : "CPU operators") +
                         " starts inside a ProfilerStep#N annotation (steps from ts " +
                         us(prof.steps.front().start_us) + " us, work from ts " + us(first) +
                         " us); give the trace torch.profiler wrote, with its steps and work "
                         "on one clock");
  }
  return prof;
}

Result<Profile> ReadKinetoTrace(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    return Bad(path, "a gzip file: gunzip it first (trainsim reads the JSON text)");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Bad(path, "a directory; give one rank's trace file (torch.profiler's .json)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("--profile " + path + ": cannot open the file");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return Bad(path, "not a regular file");
  if (std::uintmax_t(size) > kMaxTraceBytes) {
    return Bad(path, "larger than 2 GiB; profile fewer steps (torch.profiler.schedule active=)");
  }
  in.seekg(0);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseKinetoTrace(ss.str(), path);
}

}  // namespace trainsim::profile
