// emulate/protocol.h — the coordinator <-> worker wire protocol of `trainsim emulate`, and the
// deterministic training arithmetic every worker and the in-process reference share.
//
// Frames: a 4-byte little-endian length, then the payload (at most kMaxFrameBytes). A control
// message's payload is text: its type on the first line, then "key=value" lines. Ring traffic
// (gradient chunks) is raw bytes in frames. Promises: Encode/Decode round-trip; Decode refuses a
// malformed payload with an error instead of guessing; the training arithmetic is a pure function
// of (seed, rank, step, index), so every run of the same plan gives bit-identical state.
#ifndef TRAINSIM_EMULATE_PROTOCOL_H_
#define TRAINSIM_EMULATE_PROTOCOL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/status.h"

namespace trainsim::emulate {

// Protocol version in every hello: a worker built from another version is refused (exit 2).
inline constexpr int kProtocolVersion = 2;  // 2: peer copies, tree, elastic worlds
// Largest frame accepted: a bad peer (or a stray client on the port) cannot make us allocate
// more. 64 MiB is far above any chunk of the --state-bytes the command allows.
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;

struct Message {
  std::string type;  // HELLO, REFUSE, ASSIGN, ABORT, HEARTBEAT, STEP, SHARD, FINAL, TIMEOUT, DONE
  std::map<std::string, std::string> fields;

  std::string Get(const std::string& key) const;
  int64_t Int(const std::string& key) const;  // 0 when absent or not a number
  double Real(const std::string& key) const;
  Message& Set(const std::string& key, const std::string& value);
  Message& Set(const std::string& key, int64_t value);
  Message& SetReal(const std::string& key, double value);
};

// The payload of a frame (without the length prefix) and back.
std::string Encode(const Message& m);
Result<Message> Decode(const std::string& payload);
// The 4-byte length prefix of a payload of `n` bytes, and its decoding.
std::string LengthPrefix(uint32_t n);
uint32_t ParseLengthPrefix(const unsigned char* p);

// FNV-1a 64 over bytes: the shard checksum and the scenario hash (not cryptographic: it guards
// against torn writes and mixed-up scenarios, not against an adversary).
uint64_t Fnv1a64(const void* data, size_t n, uint64_t h = 1469598103934665603ull);
std::string Hex64(uint64_t v);

// The training arithmetic. The model state and the gradients are `elements` doubles.
//  - InitialState: state[i] = a fixed function of (seed, i).
//  - Gradient: rank `rank`'s gradient at step `step` (1-based), a function of (seed, rank, step).
//  - ChunkRange: ring chunk c of `world` over `elements` (the all-reduce's fixed partition).
//  - ApplyUpdate: state -= lr * sum / world (lr = kLearningRate).
// The all-reduce sums chunk c in the ring order g[c], g[c+1], ..., g[c+world-1] (mod world), the
// order the ring's reduce-scatter produces; ReferenceState replays exactly that order.
inline constexpr double kLearningRate = 0.01;  // any fixed value: the state only has to be exact
std::vector<double> InitialState(uint64_t seed, int64_t elements);
void Gradient(uint64_t seed, int rank, int64_t step, std::vector<double>* out);
std::pair<int64_t, int64_t> ChunkRange(int64_t elements, int world, int c);
void ApplyUpdate(const std::vector<double>& sum, int world, std::vector<double>* state);
// The state after `steps` fault-free steps of `world` ranks, computed in this process.
std::vector<double> ReferenceState(uint64_t seed, int64_t elements, int world, int64_t steps);

// The all-reduce algorithm and its fixed reduction order per element i:
//  - kRing: chunk c (ChunkRange) of `world` is summed g[c], g[c+1], ..., g[c+world-1] (mod world),
//    each next term added on the left: acc = g[k] + acc (what the ring's reduce-scatter does).
//  - kTree: a binary tree in heap order (rank r's children are 2r+1 and 2r+2, root 0); rank r's
//    partial is a[r] = g[r]; a[r] = a[r] + a[2r+1]; a[r] = a[r] + a[2r+2] (children that exist),
//    and the sum is a[0], broadcast back down. Different orders round differently, so each
//    algorithm has its own reference; a run is compared with the reference of its algorithm.
enum class Algorithm { kRing, kTree };
const char* AlgorithmName(Algorithm a);  // "ring", "tree"
// Sums the gradients g[0..world) in `alg`'s order into *sum (sized like g[0]).
void ReduceInOrder(const std::vector<std::vector<double>>& g, int world, Algorithm alg,
                   std::vector<double>* sum);

// A world-size schedule (ELASTIC): the steps after `from_step` (up to the next segment's
// from_step) ran with `world` ranks, rank r contributing Gradient(seed, r, step) and the update
// dividing by `world`. A fault-free run is the one segment {0, N}.
struct WorldSegment {
  int64_t from_step = 0;
  int world = 0;
};
// "0:8,120:7" and back; Parse returns an empty schedule for malformed text.
std::string FormatSchedule(const std::vector<WorldSegment>& s);
std::vector<WorldSegment> ParseSchedule(const std::string& text);
// The state after `steps` steps that follow `schedule` (REQUIRES: schedule[0].from_step == 0,
// from_step increasing), each step reduced in `alg`'s order: the reference of an elastic run.
std::vector<double> ReferenceState(uint64_t seed, int64_t elements,
                                   const std::vector<WorldSegment>& schedule, int64_t steps,
                                   Algorithm alg);

}  // namespace trainsim::emulate

#endif  // TRAINSIM_EMULATE_PROTOCOL_H_
