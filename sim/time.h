// sim::Time — simulated time as a strong type over int64 nanoseconds.
//
// Covers ±292 years at nanosecond resolution, so a months-long run fits with room to spare, and
// integer arithmetic keeps event order exact (no epsilons, unlike double seconds). Seconds as
// double appear only at the edges: reports, and rates (bytes / bandwidth) turned into durations.
//
// Arithmetic on Time asserts on overflow in debug builds; CheckedAdd/CheckedMul report it
// instead, for values that come from user input. ParseDuration accepts human durations:
// "90s", "16h", "2d", "1h30m", "1.5h", "250ms", "10us", "5ns", "0"; units ns, us, ms, s, m, h,
// d, w; components must go from larger to smaller units and each unit appears once.
#ifndef TRAINSIM_SIM_TIME_H_
#define TRAINSIM_SIM_TIME_H_

#include <cassert>
#include <compare>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "sim/status.h"

namespace trainsim::sim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time Nanos(int64_t ns) { return Time(ns); }
  static constexpr Time Micros(int64_t us) { return Time(us * 1000); }
  static constexpr Time Millis(int64_t ms) { return Time(ms * 1000000); }
  static constexpr Time Seconds(int64_t s) { return Time(s * 1000000000); }
  static constexpr Time Minutes(int64_t m) { return Seconds(m * 60); }
  static constexpr Time Hours(int64_t h) { return Seconds(h * 3600); }
  static constexpr Time Days(int64_t d) { return Seconds(d * 86400); }
  static constexpr Time Zero() { return Time(0); }
  static constexpr Time Max() { return Time(std::numeric_limits<int64_t>::max()); }

  // Rounds seconds to the nearest nanosecond. Values beyond the representable range, and NaN,
  // give nullopt (use for anything computed from user input).
  static std::optional<Time> FromSecondsChecked(double s);
  // The one checked double→int64 conversion: rounds `ns` to the nearest nanosecond; NaN, ±inf
  // and values outside int64 give nullopt. Every duration computed from user numbers (a product
  // or quotient of them) goes through this or FromSecondsChecked, never a bare static_cast.
  static std::optional<Time> FromNanosChecked(double ns);
  // REQUIRES: s finite and within ±9.2e9 s. Rounds to the nearest nanosecond, halves away
  // from zero (as std::round). Inline: the step simulation converts a duration per event.
  static Time FromSeconds(double s) {
    const double ns = s * 1e9;
    // Below 2^62 ns the cast truncates exactly and x − trunc(x) is exact, so this is
    // std::round without the library call; the rest (and NaN) takes the checked path.
    if (ns < 4611686018427387904.0 && ns > -4611686018427387904.0) {
      int64_t t = static_cast<int64_t>(ns);
      const double frac = ns - static_cast<double>(t);
      if (frac >= 0.5) {
        ++t;
      } else if (frac <= -0.5) {
        --t;
      }
      return Time(t);
    }
    return FromSecondsSlow(s);
  }

  constexpr int64_t nanos() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr bool is_max() const { return ns_ == std::numeric_limits<int64_t>::max(); }

  constexpr auto operator<=>(const Time&) const = default;

  Time operator+(Time o) const {
    std::optional<Time> r = CheckedAdd(*this, o);
    assert(r.has_value() && "sim::Time overflow in +");
    return r.value_or(Max());
  }
  Time operator-(Time o) const {
    int64_t r;
    [[maybe_unused]] bool overflow = __builtin_sub_overflow(ns_, o.ns_, &r);
    assert(!overflow && "sim::Time overflow in -");
    return Time(r);
  }
  Time& operator+=(Time o) { return *this = *this + o; }
  Time& operator-=(Time o) { return *this = *this - o; }
  Time operator*(int64_t k) const {
    std::optional<Time> r = CheckedMul(*this, k);
    assert(r.has_value() && "sim::Time overflow in *");
    return r.value_or(Max());
  }
  // Integer division of durations: how many whole `o` fit in this. REQUIRES: o > 0.
  int64_t operator/(Time o) const { return ns_ / o.ns_; }

  // Inline: the run simulation's trials add and scale times on every event (out of line they
  // were 16% of a Monte Carlo trial's samples in perf, bench/README.md).
  static std::optional<Time> CheckedAdd(Time a, Time b) {
    int64_t r;
    if (__builtin_add_overflow(a.ns_, b.ns_, &r)) return std::nullopt;
    return Time(r);
  }
  static std::optional<Time> CheckedMul(Time a, int64_t k) {
    int64_t r;
    if (__builtin_mul_overflow(a.ns_, k, &r)) return std::nullopt;
    return Time(r);
  }

 private:
  static Time FromSecondsSlow(double s);  // FromSeconds beyond ±2^62 ns, or NaN
  constexpr explicit Time(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

// Parses a human duration (see the header comment). Errors say what was wrong and what is valid.
Result<Time> ParseDuration(std::string_view text);

// Formats a duration compactly and exactly where possible: "0s", "250ms", "90s", "1h30m", "2d",
// "1d2h3m4.5s", "3h0m39s" (a unit between two others is written even when 0). Round-trips
// through ParseDuration for whole nanoseconds.
std::string FormatDuration(Time t);

// Formats seconds for reports with a sensible unit, by magnitude: < 1 ms "812.0 us", < 1 s
// "4.25 ms", < 120 s "1.430 s", < 2 h "2.50 min", < 3 d "2.10 h", else "3.50 d"; 0 is "0 s".
std::string FormatSecondsHuman(double seconds);

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_TIME_H_
