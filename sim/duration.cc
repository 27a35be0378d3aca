// Durations as text: ParseDuration, FormatDuration and FormatSecondsHuman (declared in
// sim/time.h). A file of its own because it is where user input arrives: the libFuzzer build
// instruments it for coverage while the arithmetic in time.cc, hot in every simulation, stays
// uninstrumented (fuzz/CMakeLists.txt, TRAINSIM_FUZZ_SCOPE).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/time.h"

namespace trainsim::sim {

namespace {

struct Unit {
  std::string_view name;
  int64_t ns;
};

// Longest names first so "ms" is not read as "m" followed by "s".
constexpr Unit kUnits[] = {
    {"ns", 1},
    {"us", 1000},
    {"ms", 1000000},
    {"s", 1000000000},
    {"m", 60LL * 1000000000},
    {"h", 3600LL * 1000000000},
    {"d", 86400LL * 1000000000},
    {"w", 7LL * 86400 * 1000000000},
};

constexpr const char* kDurationHelp =
    "expected a duration such as \"90s\", \"16h\", \"2d\", \"1h30m\", \"1.5h\" or \"250ms\" "
    "(units: ns, us, ms, s, m, h, d, w)";

}  // namespace

Result<Time> ParseDuration(std::string_view text) {
  // Built by appending: GCC 12 gives a false -Wrestrict for "literal" + std::string&&
  // (GCC bug 105329).
  std::string quoted = "\"";
  quoted.append(text);
  quoted += '"';
  if (text.empty()) return Status::InvalidArgument("empty duration; " + std::string(kDurationHelp));
  if (text == "0") return Time::Zero();
  if (text.front() == '-') {
    return Status::InvalidArgument("duration " + quoted + " is negative; durations are >= 0");
  }
  size_t pos = 0;
  int64_t last_unit_ns = std::numeric_limits<int64_t>::max();
  Time total = Time::Zero();
  while (pos < text.size()) {
    // Number: digits with at most one '.'.
    size_t start = pos;
    bool seen_dot = false;
    while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) ||
                                 (text[pos] == '.' && !seen_dot))) {
      if (text[pos] == '.') seen_dot = true;
      ++pos;
    }
    std::string_view number = text.substr(start, pos - start);
    if (number.empty() || number == ".") {
      return Status::InvalidArgument("bad duration " + quoted + " at character " +
                                     std::to_string(start + 1) + "; " + kDurationHelp);
    }
    // Unit: the longest known unit name at this position.
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(pos, u.name.size()) == u.name &&
          (unit == nullptr || u.name.size() > unit->name.size())) {
        // Do not take "m" when the text says "ms".
        unit = &u;
      }
    }
    if (unit == nullptr && pos + 1 < text.size() && (text[pos] == 'e' || text[pos] == 'E') &&
        (std::isdigit(static_cast<unsigned char>(text[pos + 1])) || text[pos + 1] == '-' ||
         text[pos + 1] == '+')) {
      return Status::InvalidArgument("duration " + quoted +
                                     " has an exponent: write the number out (e.g. \"1500h\"); " +
                                     kDurationHelp);
    }
    // Letters that are no unit ("1H", "2hrs", "5min"): name them; units are lower case.
    size_t end = pos;
    while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
    if (unit != nullptr && end > pos + unit->name.size()) unit = nullptr;
    if (unit == nullptr) {
      if (end > pos) {
        const std::string letters(text.substr(pos, end - pos));
        const bool upper = std::any_of(letters.begin(), letters.end(), [](char c) {
          return std::isupper(static_cast<unsigned char>(c));
        });
        return Status::InvalidArgument("duration " + quoted + " has an unknown unit \"" + letters +
                                       "\" after \"" + std::string(number) + "\"" +
                                       (upper ? " (units are lower case)" : "") + "; " +
                                       kDurationHelp);
      }
      return Status::InvalidArgument("duration " + quoted + " has no unit after \"" +
                                     std::string(number) + "\"; " + kDurationHelp);
    }
    pos += unit->name.size();
    if (unit->ns >= last_unit_ns) {
      return Status::InvalidArgument("duration " + quoted +
                                     " must list units from largest to smallest, each once");
    }
    last_unit_ns = unit->ns;
    // Whole part exactly in integers; fraction through double (rounded to the nanosecond).
    std::string_view whole = number.substr(0, number.find('.'));
    int64_t whole_value = 0;
    for (char c : whole) {
      if (__builtin_mul_overflow(whole_value, 10, &whole_value) ||
          __builtin_add_overflow(whole_value, c - '0', &whole_value)) {
        return Status::OutOfRange("duration " + quoted +
                                  " is too long (the limit is about 292 years)");
      }
    }
    int64_t part_ns;
    if (__builtin_mul_overflow(whole_value, unit->ns, &part_ns)) {
      return Status::OutOfRange("duration " + quoted +
                                " is too long (the limit is about 292 years)");
    }
    if (seen_dot) {
      std::string frac = "0";  // appended, not "0" + string: GCC bug 105329 again
      frac.append(number.substr(number.find('.')));
      double f = std::strtod(frac.c_str(), nullptr);
      int64_t frac_ns = static_cast<int64_t>(std::llround(f * static_cast<double>(unit->ns)));
      if (__builtin_add_overflow(part_ns, frac_ns, &part_ns)) {
        return Status::OutOfRange("duration " + quoted +
                                  " is too long (the limit is about 292 years)");
      }
    }
    std::optional<Time> sum = Time::CheckedAdd(total, Time::Nanos(part_ns));
    if (!sum) {
      return Status::OutOfRange("duration " + quoted +
                                " is too long (the limit is about 292 years)");
    }
    total = *sum;
  }
  return total;
}

std::string FormatDuration(Time t) {
  if (t == Time::Zero()) return "0s";
  // Work on the magnitude as unsigned so that the most negative value does not overflow.
  const int64_t signed_ns = t.nanos();
  std::string out = signed_ns < 0 ? "-" : "";
  uint64_t ns =
      signed_ns < 0 ? 0 - static_cast<uint64_t>(signed_ns) : static_cast<uint64_t>(signed_ns);
  if (ns < 1000000000) {  // below one second: the largest sub-second unit that is exact.
    if (ns % 1000000 == 0) return out + std::to_string(ns / 1000000) + "ms";
    if (ns % 1000 == 0) return out + std::to_string(ns / 1000) + "us";
    return out + std::to_string(ns) + "ns";
  }
  const uint64_t kDay = 86400ULL * 1000000000, kHour = 3600ULL * 1000000000,
                 kMin = 60ULL * 1000000000, kSec = 1000000000;
  // A unit between two printed ones is printed even when 0 ("3h0m39s", not "3h39s", which
  // reads as 3 h 39 min).
  bool started = false;
  for (auto [unit_ns, name] : {std::pair{kDay, "d"}, {kHour, "h"}, {kMin, "m"}}) {
    if (ns >= unit_ns || (started && ns > 0)) {
      out += std::to_string(ns / unit_ns) + name;
      ns %= unit_ns;
      started = true;
    }
  }
  if (ns > 0) {
    out += std::to_string(ns / kSec);
    const uint64_t frac = ns % kSec;
    if (frac != 0) {
      std::string digits = std::to_string(frac);
      digits = std::string(9 - digits.size(), '0') + digits;
      while (!digits.empty() && digits.back() == '0') digits.pop_back();
      out += "." + digits;
    }
    out += "s";
  }
  return out;
}

std::string FormatSecondsHuman(double seconds) {
  char buf[64];
  const double a = std::fabs(seconds);
  if (a == 0) {
    std::snprintf(buf, sizeof buf, "0 s");
  } else if (a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  } else if (a < 1) {
    std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  } else if (a < 120) {
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  } else if (a < 7200) {
    std::snprintf(buf, sizeof buf, "%.2f min", seconds / 60);
  } else if (a < 3 * 86400) {
    std::snprintf(buf, sizeof buf, "%.2f h", seconds / 3600);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f d", seconds / 86400);
  }
  return buf;
}

}  // namespace trainsim::sim
