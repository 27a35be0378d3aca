// What sim::TraceWriter writes (its contract is in trace_writer.h):
// {"displayTimeUnit":"ns","traceEvents":[ ... ]} with
//   - metadata events ("ph":"M") naming processes and threads, and their sort order, e.g. one
//     process per node and one thread (track) per GPU;
//   - complete events ("ph":"X": name, cat, ts, dur, pid, tid, optional args);
//   - instant events ("ph":"i", scope thread / process / global);
//   - counter events ("ph":"C", one or more named series per process);
//   - flow events ("ph":"s" / "ph":"f" sharing an id), drawn as an arrow from a slice on one
//     track to a slice on another, e.g. a pipeline send to its receive.

#include "sim/trace_writer.h"

#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "sim/atomic_file.h"

namespace trainsim::sim {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid (overlong forms,
// surrogates and code points above U+10FFFF are invalid, per RFC 3629).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
  return len;
}

// Appends a decimal integer without a temporary string.
template <typename Int>
void AppendInt(std::string& out, Int v) {
  char buf[24];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

}  // namespace

void TraceWriter::AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out += "\\ufffd";  // one replacement character per invalid byte
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  out += '"';
}

void TraceWriter::AppendMicros(std::string& out, int64_t ns) {
  // Exact: whole microseconds, then the nanosecond remainder as three digits when non-zero.
  // Work in unsigned magnitude so INT64_MIN does not overflow.
  const bool negative = ns < 0;
  const uint64_t mag = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (negative) out += '-';
  AppendInt(out, mag / 1000);
  const uint64_t frac = mag % 1000;
  if (frac != 0) {
    const char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                            static_cast<char>('0' + frac / 10 % 10),
                            static_cast<char>('0' + frac % 10)};
    out.append(digits, 4);
  }
}

void TraceWriter::AppendDouble(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  // Shortest representation that round-trips: identical on every platform with a conforming
  // to_chars, unlike printf("%g") precision choices.
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

void TraceWriter::SetProcessName(int pid, std::string_view name) {
  processes_[pid].name = std::string(name);
}

void TraceWriter::SetThreadName(int pid, int tid, std::string_view name) {
  threads_[{pid, tid}].name = std::string(name);
}

void TraceWriter::SetProcessSortIndex(int pid, int index) {
  TrackMeta& m = processes_[pid];
  m.has_sort_index = true;
  m.sort_index = index;
}

void TraceWriter::SetThreadSortIndex(int pid, int tid, int index) {
  TrackMeta& m = threads_[{pid, tid}];
  m.has_sort_index = true;
  m.sort_index = index;
}

void TraceWriter::BeginEvent(char phase, std::string_view name, int pid, int tid, Time ts) {
  events_ += event_count_ == 0 ? "\n" : ",\n";
  ++event_count_;
  events_ += "{\"ph\":\"";
  events_ += phase;
  events_ += "\",\"name\":";
  AppendJsonString(events_, name);
  events_ += ",\"pid\":";
  AppendInt(events_, pid);
  events_ += ",\"tid\":";
  AppendInt(events_, tid);
  events_ += ",\"ts\":";
  AppendMicros(events_, ts.nanos());
}

void TraceWriter::AppendArgs(const TraceArgs& args) {
  if (args.empty()) return;
  events_ += ",\"args\":{";
  bool first = true;
  for (const auto& [key, value] : args) {
    if (!first) events_ += ',';
    first = false;
    AppendJsonString(events_, key);
    events_ += ':';
    if (const int64_t* i = std::get_if<int64_t>(&value)) {
      AppendInt(events_, *i);
    } else if (const double* d = std::get_if<double>(&value)) {
      AppendDouble(events_, *d);
    } else {
      AppendJsonString(events_, std::get<std::string>(value));
    }
  }
  events_ += '}';
}

void TraceWriter::Complete(std::string_view name, std::string_view category, int pid, int tid,
                           Time start, Time duration, const TraceArgs& args) {
  assert(duration >= Time::Zero());
  BeginEvent('X', name, pid, tid, start);
  events_ += ",\"dur\":";
  AppendMicros(events_, duration.nanos() < 0 ? 0 : duration.nanos());
  events_ += ",\"cat\":";
  AppendJsonString(events_, category);
  AppendArgs(args);
  events_ += '}';
}

void TraceWriter::Instant(std::string_view name, std::string_view category, int pid, int tid,
                          Time at, InstantScope scope, const TraceArgs& args) {
  BeginEvent('i', name, pid, tid, at);
  events_ += ",\"s\":\"";
  events_ += scope == InstantScope::kGlobal ? 'g' : scope == InstantScope::kProcess ? 'p' : 't';
  events_ += "\",\"cat\":";
  AppendJsonString(events_, category);
  AppendArgs(args);
  events_ += '}';
}

void TraceWriter::FlowStart(std::string_view name, std::string_view category, int pid, int tid,
                            Time at, uint64_t flow_id) {
  BeginEvent('s', name, pid, tid, at);
  events_ += ",\"cat\":";
  AppendJsonString(events_, category);
  events_ += ",\"id\":";
  AppendInt(events_, flow_id);
  events_ += '}';
}

void TraceWriter::FlowEnd(std::string_view name, std::string_view category, int pid, int tid,
                          Time at, uint64_t flow_id) {
  BeginEvent('f', name, pid, tid, at);
  events_ += ",\"cat\":";
  AppendJsonString(events_, category);
  events_ += ",\"id\":";
  AppendInt(events_, flow_id);
  // "bp":"e": bind to the enclosing slice, so the arrow ends on the receive that is running at
  // `at` rather than on the next slice to start (the format's default).
  events_ += ",\"bp\":\"e\"}";
}

void TraceWriter::Counter(std::string_view name, int pid, Time at,
                          const std::vector<std::pair<std::string, double>>& series) {
  BeginEvent('C', name, pid, 0, at);
  TraceArgs args;
  args.reserve(series.size());
  for (const auto& [key, value] : series) args.emplace_back(key, value);
  AppendArgs(args);
  events_ += '}';
}

void TraceWriter::AppendMetadata(std::string& out) const {
  bool first = true;
  auto meta = [&](std::string_view kind, int pid, int tid, std::string_view arg_key,
                  const std::string* str_value, int int_value) {
    out += first ? "\n" : ",\n";
    first = false;
    out += "{\"ph\":\"M\",\"name\":\"";
    out += kind;
    out +=
        "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"";
    out += arg_key;
    out += "\":";
    if (str_value != nullptr) {
      AppendJsonString(out, *str_value);
    } else {
      out += std::to_string(int_value);
    }
    out += "}}";
  };
  for (const auto& [pid, m] : processes_) {
    if (!m.name.empty()) meta("process_name", pid, 0, "name", &m.name, 0);
    if (m.has_sort_index) meta("process_sort_index", pid, 0, "sort_index", nullptr, m.sort_index);
  }
  for (const auto& [key, m] : threads_) {
    if (!m.name.empty()) meta("thread_name", key.first, key.second, "name", &m.name, 0);
    if (m.has_sort_index) {
      meta("thread_sort_index", key.first, key.second, "sort_index", nullptr, m.sort_index);
    }
  }
  // events_ starts with "\n" for the first event; after metadata it needs a comma.
  if (!first && !events_.empty()) out += ',';
}

namespace {
constexpr std::string_view kHeader = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
constexpr std::string_view kFooter = "\n]}\n";
}  // namespace

std::string TraceWriter::ToJson() const {
  std::string out(kHeader);
  AppendMetadata(out);
  out += events_;
  out += kFooter;
  return out;
}

Status TraceWriter::WriteTo(const std::string& path) const {
  // Streams the stored events instead of building ToJson(): a long run's trace can be large,
  // and this avoids holding it twice.
  AtomicFileWriter w;
  TRAINSIM_RETURN_IF_ERROR(w.Open(path));
  std::string head(kHeader);
  AppendMetadata(head);
  w.Append(head);
  w.Append(events_);
  w.Append(kFooter);
  return w.Commit();
}

}  // namespace trainsim::sim
