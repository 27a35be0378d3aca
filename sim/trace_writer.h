// sim::TraceWriter — builds a Chrome / Perfetto trace-event JSON file (the "JSON Array/Object
// Format" of the Trace Event Format spec, loadable in ui.perfetto.dev and chrome://tracing).
//
// Writes {"displayTimeUnit":"ns","traceEvents":[ ... ]}: metadata ("M": process and thread names
// and sort order), complete ("X"), instant ("i"), counter ("C") and flow ("s"/"f": an arrow from
// a slice on one track to a slice on another) events; the fields of each: trace_writer.cc.
// Units: timestamps and durations are microseconds, as the format requires, printed exactly from
// integer nanoseconds ("ts":1234.567), so no rounding and no floating point.
//
// Promises: the output is valid JSON (strings escaped; invalid UTF-8 replaced by U+FFFD;
// non-finite numbers written as null) and deterministic: metadata first, ordered by (pid, tid),
// then events in the order they were added; doubles in shortest round-trip form. One event per
// line so traces diff well. Files are written through WriteFileAtomically.
#ifndef TRAINSIM_SIM_TRACE_WRITER_H_
#define TRAINSIM_SIM_TRACE_WRITER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::sim {

// A value in an event's "args" object.
using TraceArgValue = std::variant<int64_t, double, std::string>;
using TraceArgs = std::vector<std::pair<std::string, TraceArgValue>>;

class TraceWriter {
 public:
  enum class InstantScope { kThread, kProcess, kGlobal };

  // Metadata. Setting a name again replaces it. Sort indices order tracks in the viewer
  // (lower first); without one, viewers order by id.
  void SetProcessName(int pid, std::string_view name);
  void SetThreadName(int pid, int tid, std::string_view name);
  void SetProcessSortIndex(int pid, int index);
  void SetThreadSortIndex(int pid, int tid, int index);

  // A span [start, start + duration) on track (pid, tid). REQUIRES: duration >= 0. Spans on one
  // track should be disjoint or nested: viewers mis-draw partial overlaps, so give overlapping
  // work (e.g. compute and a concurrent all-reduce on one GPU) separate tids.
  void Complete(std::string_view name, std::string_view category, int pid, int tid, Time start,
                Time duration, const TraceArgs& args = {});
  // A point event, e.g. "GPU 37 failed".
  void Instant(std::string_view name, std::string_view category, int pid, int tid, Time at,
               InstantScope scope = InstantScope::kThread, const TraceArgs& args = {});
  // Counter samples: each (series, value) is one line of the counter track `name` of `pid`.
  void Counter(std::string_view name, int pid, Time at,
               const std::vector<std::pair<std::string, double>>& series);

  // An arrow from the slice enclosing `at` on (pid, tid) to the slice enclosing the matching
  // FlowEnd's time on its track. `flow_id` pairs the two ends; use each id once per trace.
  void FlowStart(std::string_view name, std::string_view category, int pid, int tid, Time at,
                 uint64_t flow_id);
  void FlowEnd(std::string_view name, std::string_view category, int pid, int tid, Time at,
               uint64_t flow_id);

  // Number of non-metadata events added.
  size_t event_count() const { return event_count_; }

  // The whole trace as JSON text.
  std::string ToJson() const;
  // Writes exactly ToJson()'s bytes to `path` atomically (streamed, without building the
  // string); errors name the path.
  Status WriteTo(const std::string& path) const;

  // Appends `text` as a JSON string literal (with quotes) to `out`. Exposed for other JSON
  // writers and for tests.
  static void AppendJsonString(std::string& out, std::string_view text);
  // Appends integer nanoseconds as exact decimal microseconds ("1234.567", "-0.001", "5").
  static void AppendMicros(std::string& out, int64_t ns);
  // Appends a double in shortest round-trip form; NaN and infinities become null.
  static void AppendDouble(std::string& out, double v);

 private:
  struct TrackMeta {
    std::string name;  // empty when not set
    bool has_sort_index = false;
    int sort_index = 0;
  };
  void BeginEvent(char phase, std::string_view name, int pid, int tid, Time ts);
  void AppendArgs(const TraceArgs& args);
  void AppendMetadata(std::string& out) const;  // metadata events, then a separator if needed

  std::map<int, TrackMeta> processes_;
  std::map<std::pair<int, int>, TrackMeta> threads_;
  std::string events_;  // serialised events, each line starting with ",\n" except the first
  size_t event_count_ = 0;
};

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_TRACE_WRITER_H_
