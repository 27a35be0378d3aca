#include "cli/report/format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>

#include "scenarios/scenario.h"

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

std::string Human(double seconds) { return Duration(seconds); }
std::string Human(sim::Time t) { return Duration(t); }
std::string Pct(double fraction) { return Fmt("%.2f%%", 100 * fraction); }

std::string At(sim::Time t) {
  return sim::FormatDuration(sim::Time::Millis((t.nanos() + 500000) / 1000000));
}

std::string Seconds(double s) {
  if (s >= 1) return Fmt("%.3f s", s);
  return Fmt("%.2f ms", s * 1e3);
}

std::string Gb(double bytes) { return Fmt("%.1f GB", bytes / 1e9); }

namespace {

std::string HexByte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", b);
  return buf;
}

// The code point of the well-formed UTF-8 sequence at text[i] of length `len`.
uint32_t CodePoint(std::string_view text, size_t i, size_t len) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data()) + i;
  if (len == 1) return b[0];
  uint32_t cp = b[0] & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (b[k] & 0x3F);
  return cp;
}

size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  return 2;
}

bool IsFormatControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    // Well-formed up to the end of this sequence? (FirstInvalidUtf8 checks it strictly.)
    const size_t len = SequenceLength(c);
    const std::string_view seq = text.substr(i, len);
    if (seq.size() < len || scenarios::FirstInvalidUtf8(seq).has_value()) {
      out += HexByte(c);
      ++i;
      continue;
    }
    const uint32_t cp = CodePoint(text, i, len);
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == 0x1B) {
      out += "\\e";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += HexByte(static_cast<unsigned char>(cp));
    } else if (IsFormatControl(cp)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%04X}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(seq);
    }
    i += len;
  }
  return out;
}

std::string ShareRow(const std::string& label, const std::string& value, double part, double whole,
                     const char* pct_format) {
  return Line(label, value + Fmt(pct_format, whole > 0 ? 100 * part / whole : 0));
}

// --- Units and durations (format.h) --------------------------------------------------------

namespace {

// Three significant digits of v in [1, 1000) with `unit`; false when v rounds to 1000 (the
// caller moves to the next unit).
bool ThreeDigits(double v, const char* unit, std::string* out) {
  const char* format = v < 9.995 ? "%.2f %s" : v < 99.95 ? "%.1f %s" : "%.0f %s";
  if (v >= 999.5) return false;
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v, unit);
  *out = buf;
  return true;
}

}  // namespace

std::string Duration(double seconds) {
  if (std::isnan(seconds)) return "n/a";
  if (seconds == 0) return "0 s";
  if (seconds < 0) {
    // Appends, not "literal" + std::string&&: GCC 12's false -Wrestrict (GCC bug 105329).
    std::string negative = "-";
    negative.append(Duration(-seconds));
    return negative;
  }
  if (std::isinf(seconds)) return "inf";
  std::string out;
  if (seconds < 1e-6 && ThreeDigits(seconds * 1e9, "ns", &out)) return out;
  if (seconds < 1e-3 && ThreeDigits(std::max(1.0, seconds * 1e6), "us", &out)) return out;
  if (seconds < 1 && ThreeDigits(std::max(1.0, seconds * 1e3), "ms", &out)) return out;
  if (seconds < 60 && ThreeDigits(std::max(1.0, seconds), "s", &out)) return out;
  char buf[64];
  if (seconds < 3600) {
    // Tenths of a second, carried into minutes when they round up to 60 s.
    const long long tenths = std::llround(seconds * 10);
    if (tenths < 36000) {
      std::snprintf(buf, sizeof buf, "%lldm%lld.%llds", tenths / 600, tenths % 600 / 10,
                    tenths % 10);
      return buf;
    }
  }
  if (seconds < 86400) {
    const long long s = std::llround(seconds);
    if (s < 86400) {
      std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", s / 3600, s % 3600 / 60, s % 60);
      return buf;
    }
  }
  const double minutes = std::round(seconds / 60);
  if (!(minutes < 9.2e18)) return Fmt("%.3g d", seconds / 86400);
  const long long m = static_cast<long long>(minutes);
  std::snprintf(buf, sizeof buf, "%lldd%02lldh%02lldm", m / 1440, m % 1440 / 60, m % 60);
  return buf;
}

std::string Duration(sim::Time t) { return Duration(t.seconds()); }

std::string Gigabytes(double bytes) { return Fmt("%.1f GB", bytes / 1e9); }
std::string Gibibytes(double bytes) { return Fmt("%.1f GiB", bytes / 1073741824.0); }

}  // namespace trainsim::cli::report
