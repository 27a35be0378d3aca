// emulate/checkpoint_store.h — the emulation's real checkpoints in a directory.
//
// Layout of DIR: shard-<step>-<rank>.bin (one per rank: a header line "trainsim-shard v1 step rank
// world elements checksum\n" and then the rank's slice of the state as raw doubles), and
// manifest-<step>.txt (committed by the coordinator once every shard of that step is complete).
// Promises: WriteShard fsyncs the file before returning its checksum; CommitManifest writes a
// temporary file, fsyncs it and renames it into place (a reader never sees half a manifest);
// FindRestorable returns the newest manifest whose every shard exists and matches its checksum,
// naming each newer one it skipped and why (a torn write, a corrupted shard).
#ifndef TRAINSIM_EMULATE_CHECKPOINT_STORE_H_
#define TRAINSIM_EMULATE_CHECKPOINT_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/status.h"

namespace trainsim::emulate {

std::string ShardPath(const std::string& dir, int64_t step, int rank);
std::string ManifestPath(const std::string& dir, int64_t step);

// Writes `n` doubles as rank `rank`'s shard of step `step` and fsyncs it; returns the checksum
// (Fnv1a64 of the data bytes). `die_halfway`: the fault injector's hook — the process SIGKILLs
// itself after writing half the data (a real kill during a real write; nothing is cleaned up).
Result<uint64_t> WriteShard(const std::string& dir, int64_t step, int rank, int world,
                            const double* data, int64_t n, bool die_halfway = false);

// Reads and verifies a shard: header fields and checksum must match.
Status ReadShard(const std::string& dir, int64_t step, int rank, int world, uint64_t checksum,
                 std::vector<double>* out);

struct Manifest {
  int64_t step = 0;
  int world = 0;
  int64_t elements = 0;
  std::vector<uint64_t> checksums;  // per rank
  // The world-size schedule that produced this state (FormatSchedule; "" in v1 manifests,
  // read as one segment of `world` ranks).
  std::string schedule;
};
Status CommitManifest(const std::string& dir, const Manifest& m);

struct Restorable {
  bool found = false;  // false: start from step 0
  Manifest manifest;
  std::vector<std::string> skipped;  // "manifest-40: shard 3 checksum mismatch", newest first
};
// Scans DIR for manifests of `world` ranks (0: any, as an elastic run restores a checkpoint of
// another world) and `elements` elements, newest first, verifying each shard, and returns the
// first complete one. `state` (when not null) receives the restored full state (all shards
// concatenated).
Result<Restorable> FindRestorable(const std::string& dir, int world, int64_t elements,
                                  std::vector<double>* state);

// checkpoint.keep_last: deletes every committed manifest but the newest `keep_last` (0 = keep
// all), and their shards. Shards of steps without a manifest (a write in progress) are kept.
Status PruneManifests(const std::string& dir, int keep_last);
// Silent data corruption found: every manifest of a step after `clean_step` holds corrupted
// state; each is renamed to corrupt-manifest-STEP.txt (kept for inspection, never restored).
// Returns the steps set aside.
std::vector<int64_t> SetAsideManifestsAfter(const std::string& dir, int64_t clean_step);

}  // namespace trainsim::emulate

#endif  // TRAINSIM_EMULATE_CHECKPOINT_STORE_H_
