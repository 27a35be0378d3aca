// sim::RandomStreams — independent, seeded random streams, one per purpose.
//
// Every random draw in trainsim comes from a stream derived from the scenario seed and a purpose
// name ("failures", "trial/17/failures", "stragglers"), so adding draws for one purpose never
// shifts another's and a run is byte-for-byte reproducible. Derivation: SplitMix64 over the seed
// mixed with a stable 64-bit FNV-1a hash of the name; the generator is xoshiro256** (public
// domain, Blackman & Vigna). Distributions are computed here from raw bits, not with
// <random>'s distributions, whose output differs between standard libraries. NextU64, Uniform
// and UniformInt are pure integer arithmetic, identical everywhere; Exponential and Weibull call
// log1p and pow, so they are identical wherever the C math library is (the same glibc gives the
// same bits; a different libm may differ in the last ulp).
#ifndef TRAINSIM_SIM_RANDOM_H_
#define TRAINSIM_SIM_RANDOM_H_

#include <cstdint>
#include <string_view>

namespace trainsim::sim {

// SplitMix64 step: advances `state` and returns the next output (used to seed xoshiro256**).
uint64_t SplitMix64(uint64_t& state);
// 64-bit FNV-1a of the bytes of `text`; stable across platforms and runs.
uint64_t Fnv1a64(std::string_view text);

class Rng {
 public:
  // Seeds the four state words with four SplitMix64 outputs starting from `seed`.
  explicit Rng(uint64_t seed);
  // An Rng with exactly this state (for known-answer tests). REQUIRES: not all zero.
  static Rng FromState(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3);
  uint64_t NextU64();
  // Uniform in [0, 1) with 53 random bits.
  double Uniform();
  // Uniform integer in [0, n). REQUIRES: n > 0. Unbiased (rejection).
  uint64_t UniformInt(uint64_t n);
  // Exponential with the given mean. REQUIRES: mean > 0.
  double Exponential(double mean);
  // Weibull with shape k and scale lambda. REQUIRES: k > 0, lambda > 0.
  double Weibull(double shape, double scale);

 private:
  uint64_t s_[4];
};

class RandomStreams {
 public:
  explicit RandomStreams(uint64_t seed) : seed_(seed) {}
  // The stream for `purpose`: Rng(seed XOR Fnv1a64(purpose)). The same (seed, purpose) always
  // gives the same sequence; streams are independent objects, so drawing from one never moves
  // another.
  Rng Stream(std::string_view purpose) const;
  uint64_t seed() const { return seed_; }

 private:
  uint64_t seed_;
};

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_RANDOM_H_
