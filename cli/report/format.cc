#include "cli/report/format.h"

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

}  // namespace trainsim::cli::report
