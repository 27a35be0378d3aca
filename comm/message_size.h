// comm message sizes as users write them: "8B", "64KiB", "1MB", "8GiB", "4096".
//
// Units: B (or none) = bytes; KB, MB, GB, TB are powers of 10 (1 KB = 1000 B, SI); KiB, MiB, GiB,
// TiB are powers of 2 (1 KiB = 1024 B). Units are case-sensitive and written in full ("8G",
// "8Gi" and "8gib" are rejected: say "8GiB" or "8GB"). Only whole numbers of bytes.
// A range "MIN:MAX" lists MIN, MIN·f, MIN·f², … up to MAX (nccl-tests' -b/-e/-f), MAX included
// when reached exactly.
//
// Invariants: parsed sizes are > 0 and fit in 63 bits; errors say what is valid.
#ifndef TRAINSIM_COMM_MESSAGE_SIZE_H_
#define TRAINSIM_COMM_MESSAGE_SIZE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace trainsim::comm {

Result<uint64_t> ParseMessageSize(std::string_view text);
// "MIN:MAX" or a single size. REQUIRES nothing; errors for MIN > MAX or factor < 2.
Result<std::vector<uint64_t>> ParseSizeRange(std::string_view text, uint64_t factor = 2);
// Compact, exact when possible: 8 -> "8B", 65536 -> "64KiB", 1073741824 -> "1GiB".
std::string FormatMessageSize(uint64_t bytes);

}  // namespace trainsim::comm

#endif  // TRAINSIM_COMM_MESSAGE_SIZE_H_
