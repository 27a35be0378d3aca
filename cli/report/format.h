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

std::string Human(double seconds);  // sim::FormatSecondsHuman
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

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_FORMAT_H_
