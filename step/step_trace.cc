// The step's Chrome trace-event JSON (step_simulation.h, WriteChromeTrace).
#include <cstdio>
#include <set>

#include "step/step_simulation.h"

namespace trainsim::step {
namespace {

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

void WriteChromeTrace(const StepResult& result, std::ostream& out) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  std::set<int> gpus;
  for (const TraceSlice& s : result.trace) gpus.insert(s.gpu);
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int g : gpus) {
    sep();
    out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << g << ",\"args\":{\"name\":\"GPU "
        << g << "\"}}";
    sep();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << g
        << ",\"tid\":0,\"args\":{\"name\":\"compute\"}}";
    sep();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << g
        << ",\"tid\":1,\"args\":{\"name\":\"communication\"}}";
  }
  char buf[64];
  for (const TraceSlice& s : result.trace) {
    sep();
    out << "{\"name\":\"" << JsonEscape(s.name) << "\",\"cat\":\"" << s.category
        << "\",\"ph\":\"X\",\"pid\":" << s.gpu << ",\"tid\":" << s.track;
    std::snprintf(buf, sizeof buf, ",\"ts\":%.3f,\"dur\":%.3f", s.start_s * 1e6,
                  s.duration_s * 1e6);
    out << buf;
    if (!s.args.empty()) out << ",\"args\":" << s.args;
    out << "}";
  }
  out << "]}\n";
}

}  // namespace trainsim::step
