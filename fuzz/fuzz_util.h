// Helpers shared by the libFuzzer targets: a property that fails aborts (libFuzzer saves the
// input as a crash), so a wrong answer is found like a crash.
#ifndef TRAINSIM_FUZZ_FUZZ_UTIL_H_
#define TRAINSIM_FUZZ_FUZZ_UTIL_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond, what)                                                       \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "fuzz property failed: %s: %s\n", #cond, (what).c_str()); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

#endif  // TRAINSIM_FUZZ_FUZZ_UTIL_H_
