// sim/parallel.h — independent pieces of work on all cores, with one thread's results.
//
// What it is: ParallelFor(n, threads, body) calls body(i) once for every i in [0, n), on up to
// `threads` threads (the calling thread is one of them), handing out indices in order from one
// shared counter. No pool lives between calls: a call starts its threads and joins them, which
// costs tens of microseconds — nothing next to a Monte Carlo trial or a step simulation.
//
// What it promises: the caller gets what one thread would give, whatever the thread count,
// provided body(i) touches only its own slot i of the output (and reads shared data it does not
// change) and draws its random numbers from a stream seeded by i, never from a shared one.
//   - Errors: when some body(i) returns an error, ParallelFor returns the error of the lowest
//     such i — the one a single thread running in order would have stopped at. Indices above
//     a failed one may be skipped.
//   - Exceptions: one thrown by body(i) is caught, and the lowest index's is rethrown in the
//     caller after every thread has joined (so std::bad_alloc still reaches main's handler).
// ResolveThreads(0) is "all cores" (std::thread::hardware_concurrency, at least 1).
#ifndef TRAINSIM_SIM_PARALLEL_H_
#define TRAINSIM_SIM_PARALLEL_H_

#include <cstdint>
#include <functional>

#include "sim/status.h"

namespace trainsim::sim {

// The largest --threads accepted: far above any machine's cores, low enough that a typo
// (--threads 100000) is an error, not 100,000 threads.
inline constexpr int kMaxThreads = 1024;

// 0 → the machine's cores; n ≥ 1 → n. Negative or above kMaxThreads: InvalidArgument naming
// `option` (e.g. "--threads").
Result<int> ResolveThreads(int requested, const char* option = "--threads");

Status ParallelFor(int64_t n, int threads, const std::function<Status(int64_t)>& body);

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_PARALLEL_H_
