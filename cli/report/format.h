// cli/report/format.h — the text formatting every command's report shares: printf-style
// numbers, labelled lines, padding, human durations and percentages, and the one
// "value and share of the whole" row that the step and run breakdown tables are made of.
//
// Promises: pure functions of their arguments; the same input gives the same bytes.
#ifndef TRAINSIM_CLI_REPORT_FORMAT_H_
#define TRAINSIM_CLI_REPORT_FORMAT_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "sim/time.h"

namespace trainsim::cli::report {

std::string Fmt(const char* format, double v);  // one printf conversion of `v`

// "  label" padded to `width` columns, then the value and a newline.
std::string Line(const std::string& label, const std::string& value, size_t width = 22);
std::string Pad(std::string s, size_t width);                // left-aligned in `width` columns
std::string AlignRight(const std::string& s, size_t width);  // right-aligned

std::string Human(double seconds);  // Duration (below)
std::string Human(sim::Time t);
std::string Pct(double fraction);  // 0.1234 → "12.34%"
std::string At(sim::Time t);       // a time in the run to the millisecond: "16h15m54.958s"
std::string Seconds(double s);     // "1.234 s", or "12.34 ms" under a second
std::string Gb(double bytes);      // "12.3 GB"

// Text from input (a scenario, model or cause name) made safe to print on a terminal or in a
// text report: C0 controls, DEL and C1 controls (ESC sequences that clear the screen, newlines
// that forge report lines), the bidirectional overrides U+202A..U+202E and U+2066..U+2069, and
// U+2028/U+2029 become \n, \t, \r, \e, \xHH or \u{HHHH}; a byte that is not UTF-8 becomes
// \xHH; a backslash becomes \\ so the escaped text reads back unambiguously. Everything else
// passes through unchanged, so an ordinary name prints exactly as it was written.
std::string Printable(std::string_view text);

// A breakdown row: Line(label, value + Fmt(pct_format, 100 · part / whole)); 0% when whole <= 0.
std::string ShareRow(const std::string& label, const std::string& value, double part, double whole,
                     const char* pct_format);

// --- Units and durations: the one convention of every text report (issue 19) ---------------
// Bytes: GB = 1e9 bytes and GiB = 2^30 bytes, always labelled (never "GB" for 2^30).
// Durations: rounded to what is meaningful for their size, never raw nanoseconds:
//   0 → "0 s"; under 1 µs "512 ns"; under 1 ms "45.2 us"; under 1 s "2.35 ms"; under a minute
//   "12.3 s" (three significant digits); under an hour "4m11.9s"; under a day "3h25m10s"
//   (whole seconds); from a day "21d03h25m" (whole minutes). Negative values get a "-".
// JSON keeps seconds (*_s) unrounded; only text goes through these.
std::string Duration(double seconds);
std::string Duration(sim::Time t);
std::string Gigabytes(double bytes);  // "46.1 GB" (1e9)
std::string Gibibytes(double bytes);  // "80.0 GiB" (2^30)

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_FORMAT_H_
