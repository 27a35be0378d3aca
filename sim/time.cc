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

Time Time::FromSeconds(double s) {
  std::optional<Time> t = FromSecondsChecked(s);
  assert(t.has_value() && "Time::FromSeconds out of range");
  return t.value_or(Time::Max());
}

std::optional<Time> Time::CheckedAdd(Time a, Time b) {
  int64_t r;
  if (__builtin_add_overflow(a.ns_, b.ns_, &r)) return std::nullopt;
  return Time(r);
}

std::optional<Time> Time::CheckedMul(Time a, int64_t k) {
  int64_t r;
  if (__builtin_mul_overflow(a.ns_, k, &r)) return std::nullopt;
  return Time(r);
}

Time Time::operator+(Time o) const {
  std::optional<Time> r = CheckedAdd(*this, o);
  assert(r.has_value() && "sim::Time overflow in +");
  return r.value_or(Max());
}

Time Time::operator-(Time o) const {
  int64_t r;
  [[maybe_unused]] bool overflow = __builtin_sub_overflow(ns_, o.ns_, &r);
  assert(!overflow && "sim::Time overflow in -");
  return Time(r);
}

Time Time::operator*(int64_t k) const {
  std::optional<Time> r = CheckedMul(*this, k);
  assert(r.has_value() && "sim::Time overflow in *");
  return r.value_or(Max());
}

}  // namespace trainsim::sim
