#include "sim/time.h"

#include <cassert>
#include <cmath>

namespace trainsim::sim {

std::optional<Time> Time::FromSecondsChecked(double s) {
  if (!std::isfinite(s)) return std::nullopt;
  return FromNanosChecked(s * 1e9);
}

std::optional<Time> Time::FromNanosChecked(double raw_ns) {
  if (!std::isfinite(raw_ns)) return std::nullopt;
  const double ns = std::round(raw_ns);
  // 2^63 is exactly representable; anything at or above it does not fit.
  if (ns >= 9223372036854775808.0 || ns < -9223372036854775808.0) return std::nullopt;
  return Time::Nanos(static_cast<int64_t>(ns));
}

Time Time::FromSecondsSlow(double s) {
  std::optional<Time> t = FromSecondsChecked(s);
  assert(t.has_value() && "Time::FromSeconds out of range");
  return t.value_or(Time::Max());
}

}  // namespace trainsim::sim
