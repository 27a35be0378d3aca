#include "cli/report/format.h"

#include <cstdio>

namespace trainsim::cli::report {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Line(const std::string& label, const std::string& value, size_t width) {
  std::string out = "  " + label;
  if (out.size() < width) out.resize(width, ' ');
  return out + value + "\n";
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

std::string AlignRight(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string Human(double seconds) { return sim::FormatSecondsHuman(seconds); }
std::string Human(sim::Time t) { return sim::FormatSecondsHuman(t.seconds()); }
std::string Pct(double fraction) { return Fmt("%.2f%%", 100 * fraction); }

std::string At(sim::Time t) {
  return sim::FormatDuration(sim::Time::Millis((t.nanos() + 500000) / 1000000));
}

std::string Seconds(double s) {
  if (s >= 1) return Fmt("%.3f s", s);
  return Fmt("%.2f ms", s * 1e3);
}

std::string Gb(double bytes) { return Fmt("%.1f GB", bytes / 1e9); }

std::string ShareRow(const std::string& label, const std::string& value, double part, double whole,
                     const char* pct_format) {
  return Line(label, value + Fmt(pct_format, whole > 0 ? 100 * part / whole : 0));
}

}  // namespace trainsim::cli::report
