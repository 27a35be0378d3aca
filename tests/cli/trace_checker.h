// An independent checker of Chrome / Perfetto trace-event JSON against the Trace Event Format's
// rules (the "JSON Object Format" of Google's Trace Event Format document), for the step trace
// tests. It parses the text itself (nlohmann::json) and shares no code with sim::TraceWriter.
//
// Rules checked, each violation reported as one line:
//   - the file is {"traceEvents":[...]} and every event has "ph", "pid", "tid" and "name";
//   - "ts" and "dur" are microseconds written with at most 3 decimals (whole nanoseconds), and
//     dur >= 0;
//   - complete events ("X") on one track (pid, tid) nest perfectly: sorted by start, each slice
//     ends before the enclosing open slice ends or starts at or after its end (no partial
//     overlap, not even by 1 ns);
//   - every "X" has a non-empty "args" object;
//   - every track with slices has a "thread_name" and every process a "process_name";
//   - flows: each id has exactly one "s" and one "f" with the same "cat", the start no later
//     than the end, and each end inside a slice of its own track;
//   - counters ("C"): "args" holds finite numbers >= 0, samples of one counter (pid, name) in
//     non-decreasing time.
#ifndef TRAINSIM_TESTS_CLI_TRACE_CHECKER_H_
#define TRAINSIM_TESTS_CLI_TRACE_CHECKER_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace trainsim::test_util {

struct CheckedSlice {
  int64_t start_ns = 0, end_ns = 0;
  std::string name;
  const nlohmann::json* event = nullptr;
};

struct TraceCheck {
  std::vector<std::string> errors;
  // Slices per track (pid, tid), sorted by start (enclosing first).
  std::map<std::pair<int64_t, int64_t>, std::vector<CheckedSlice>> tracks;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::map<int64_t, std::string> process_names;
  size_t flows = 0;
  // Counter samples per (pid, counter name): (ts ns, first series value).
  std::map<std::pair<int64_t, std::string>, std::vector<std::pair<int64_t, double>>> counters;
  nlohmann::json doc;
};

// Microseconds with at most three decimals, as whole nanoseconds; false if not so written.
inline bool MicrosToNanos(const std::string& text, int64_t* ns) {
  static const std::regex kMicros(R"(^-?[0-9]+(\.[0-9]{1,3})?$)");
  if (!std::regex_match(text, kMicros)) return false;
  const size_t dot = text.find('.');
  std::string whole = text.substr(0, dot),
              frac = dot == std::string::npos ? "" : text.substr(dot + 1);
  while (frac.size() < 3) frac += '0';
  const bool neg = !whole.empty() && whole[0] == '-';
  const int64_t w = std::stoll(neg ? whole.substr(1) : whole);
  const int64_t v = w * 1000 + std::stoll(frac);
  *ns = neg ? -v : v;
  return true;
}

inline TraceCheck CheckTrace(const std::string& text) {
  TraceCheck c;
  auto fail = [&](const std::string& e) {
    if (c.errors.size() < 50) c.errors.push_back(e);
  };
  try {
    c.doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    fail(std::string("not JSON: ") + e.what());
    return c;
  }
  if (!c.doc.is_object() || !c.doc.contains("traceEvents") || !c.doc["traceEvents"].is_array()) {
    fail("no traceEvents array");
    return c;
  }
  // The raw text of each event's ts and dur (nlohmann::json would turn them into doubles): one
  // event per line is not assumed; the numbers are found in document order.
  static const std::regex kTsDur(R"re("(ts|dur)":(-?[0-9.eE+-]+))re");
  std::vector<std::string> ts_text, dur_text;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kTsDur);
       it != std::sregex_iterator(); ++it) {
    ((*it)[1] == "ts" ? ts_text : dur_text).push_back((*it)[2]);
  }
  size_t ts_i = 0, dur_i = 0;
  std::map<uint64_t, std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, std::string>>>
      flow_ends;  // id -> (ph, pid, tid, ts, cat)
  for (const nlohmann::json& e : c.doc["traceEvents"]) {
    if (!e.contains("ph") || !e.contains("pid") || !e.contains("name")) {
      fail("event without ph/pid/name: " + e.dump());
      continue;
    }
    const std::string ph = e["ph"];
    const int64_t pid = e["pid"];
    const int64_t tid = e.value("tid", int64_t{0});
    if (ph == "M") {
      if (e["name"] == "thread_name") c.thread_names[{pid, tid}] = e["args"]["name"];
      if (e["name"] == "process_name") c.process_names[pid] = e["args"]["name"];
      continue;
    }
    int64_t ts = 0;
    if (!e.contains("ts") || ts_i >= ts_text.size() || !MicrosToNanos(ts_text[ts_i++], &ts)) {
      fail("ts not whole nanoseconds in µs: " + e.dump());
      continue;
    }
    if (ph == "X") {
      int64_t dur = 0;
      if (!e.contains("dur") || dur_i >= dur_text.size() ||
          !MicrosToNanos(dur_text[dur_i++], &dur) || dur < 0) {
        fail("dur not whole nanoseconds >= 0: " + e.dump());
        continue;
      }
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
        fail("slice without args: " + e.dump());
      }
      c.tracks[{pid, tid}].push_back({ts, ts + dur, e["name"], &e});
    } else if (ph == "s" || ph == "f") {
      flow_ends[e["id"].get<uint64_t>()].emplace_back(ph, pid, tid, ts, e.value("cat", ""));
    } else if (ph == "C") {
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
        fail("counter without values: " + e.dump());
        continue;
      }
      double first = 0;
      bool have = false;
      for (const auto& [k, v] : e["args"].items()) {
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
          fail("counter value not a finite number >= 0: " + e.dump());
        } else if (!have) {
          first = v.get<double>();
          have = true;
        }
      }
      auto& series = c.counters[{pid, e["name"].get<std::string>()}];
      if (!series.empty() && series.back().first > ts)
        fail("counter goes back in time: " + e.dump());
      series.push_back({ts, first});
    }
  }
  for (auto& [track, slices] : c.tracks) {
    std::stable_sort(
        slices.begin(), slices.end(), [](const CheckedSlice& a, const CheckedSlice& b) {
          return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
        });
    std::vector<const CheckedSlice*> open;
    for (const CheckedSlice& s : slices) {
      while (!open.empty() && open.back()->end_ns <= s.start_ns) open.pop_back();
      if (!open.empty() && s.end_ns > open.back()->end_ns) {
        fail("partial overlap on pid " + std::to_string(track.first) + " tid " +
             std::to_string(track.second) + ": '" + open.back()->name + "' [" +
             std::to_string(open.back()->start_ns) + ", " + std::to_string(open.back()->end_ns) +
             ") and '" + s.name + "' [" + std::to_string(s.start_ns) + ", " +
             std::to_string(s.end_ns) + ")");
      }
      open.push_back(&s);
    }
    if (!c.thread_names.count(track))
      fail("track without thread_name: pid " + std::to_string(track.first) + " tid " +
           std::to_string(track.second));
    if (!c.process_names.count(track.first))
      fail("process without process_name: " + std::to_string(track.first));
  }
  auto inside_slice = [&](int64_t pid, int64_t tid, int64_t ts) {
    auto it = c.tracks.find({pid, tid});
    if (it == c.tracks.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const CheckedSlice& s) { return s.start_ns <= ts && ts <= s.end_ns; });
  };
  for (const auto& [id, ends] : flow_ends) {
    if (ends.size() != 2 || std::get<0>(ends[0]) != "s" || std::get<0>(ends[1]) != "f") {
      fail("flow " + std::to_string(id) + " is not one 's' followed by one 'f'");
      continue;
    }
    const auto& [ph_s, pid_s, tid_s, ts_s, cat_s] = ends[0];
    const auto& [ph_f, pid_f, tid_f, ts_f, cat_f] = ends[1];
    if (cat_s != cat_f) fail("flow " + std::to_string(id) + " ends differ in cat");
    if (ts_s > ts_f) fail("flow " + std::to_string(id) + " ends before it starts");
    if (!inside_slice(pid_s, tid_s, ts_s))
      fail("flow " + std::to_string(id) + " start outside a slice");
    if (!inside_slice(pid_f, tid_f, ts_f))
      fail("flow " + std::to_string(id) + " end outside a slice");
    ++c.flows;
  }
  return c;
}

}  // namespace trainsim::test_util

#endif  // TRAINSIM_TESTS_CLI_TRACE_CHECKER_H_
