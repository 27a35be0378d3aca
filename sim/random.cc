#include "sim/random.h"

#include <cassert>
#include <cmath>

namespace trainsim::sim {
namespace {

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// GCC and Clang's 128-bit integer; __extension__ keeps -Wpedantic quiet about it.
__extension__ typedef unsigned __int128 U128;

}  // namespace

uint64_t SplitMix64(uint64_t& state) {
  // Steele, Lea & Flood, "Fast splittable pseudorandom number generators" (OOPSLA 2014); the
  // constants are those of Vigna's reference splitmix64.c.
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Fnv1a64(std::string_view text) {
  // FNV-1a, 64-bit offset basis and prime (Fowler, Noll, Vo; IETF draft-eastlake-fnv).
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

Rng::Rng(uint64_t seed) {
  // SplitMix64 expands the seed into a state that is never all zero (xoshiro's one bad state):
  // its output is a bijection of a counter, and four consecutive outputs are never all zero.
  uint64_t sm = seed;
  for (uint64_t& s : s_) s = SplitMix64(sm);
}

Rng Rng::FromState(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3) {
  Rng r(0);
  r.s_[0] = s0;
  r.s_[1] = s1;
  r.s_[2] = s2;
  r.s_[3] = s3;
  return r;
}

uint64_t Rng::NextU64() {
  // xoshiro256** 1.0 (Blackman & Vigna, public domain reference xoshiro256starstar.c).
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

double Rng::Uniform() {
  // The top 53 bits (xoshiro's low bits are its weakest) scaled by 2^-53: every value is a
  // multiple of 2^-53 in [0, 1), each equally likely.
  return static_cast<double>(NextU64() >> 11) * 0x1.0p-53;
}

uint64_t Rng::UniformInt(uint64_t n) {
  assert(n > 0 && "Rng::UniformInt(0)");
  if (n == 0) return 0;
  // Lemire, "Fast random integer generation in an interval" (ACM TOMACS 2019): multiply-shift,
  // rejecting the low products that would make some residues more likely than others.
  U128 m = static_cast<U128>(NextU64()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    while (low < threshold) {
      m = static_cast<U128>(NextU64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::Exponential(double mean) {
  assert(mean > 0);
  // Inversion: F^-1(u) = -mean ln(1 - u). With u in [0, 1), 1 - u is in (0, 1], so the log is
  // finite; log1p keeps precision for small u.
  return -mean * std::log1p(-Uniform());
}

double Rng::Weibull(double shape, double scale) {
  assert(shape > 0 && scale > 0);
  // Inversion: F(x) = 1 - exp(-(x/scale)^shape), so F^-1(u) = scale (-ln(1 - u))^(1/shape).
  return scale * std::pow(-std::log1p(-Uniform()), 1.0 / shape);
}

Rng RandomStreams::Stream(std::string_view purpose) const { return Rng(seed_ ^ Fnv1a64(purpose)); }

}  // namespace trainsim::sim
