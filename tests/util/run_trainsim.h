// Runs the built `trainsim` binary (or any program) for the tests that drive the command line
// (tests/cli, tests/comm, tests/hardening): exit code (or the signal that killed it), stdout and
// stderr captured separately, with a wall-clock limit so a hang fails a test instead of stalling
// ctest, and optional file-size (RLIMIT_FSIZE, SIGXFSZ ignored, so a write fails part-way) and
// address-space limits. Nothing goes through a shell: arguments reach the program verbatim.
// Link `trainsim_test_util`; it carries TRAINSIM_BINARY and TRAINSIM_SOURCE_DIR itself.
#ifndef TRAINSIM_TESTS_UTIL_RUN_TRAINSIM_H_
#define TRAINSIM_TESTS_UTIL_RUN_TRAINSIM_H_

#include <string>
#include <vector>

namespace trainsim::test_util {

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal (see signal)
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

struct RunLimits {
  int timeout_s = 60;
  long file_size_limit_bytes = -1;  // -1: none
  long memory_limit_bytes = -1;     // RLIMIT_AS; -1: none. Not applied under AddressSanitizer.
};

// Runs TRAINSIM_BINARY with `args` in `cwd` (default: the source tree, TRAINSIM_SOURCE_DIR).
RunResult RunTrainsim(const std::vector<std::string>& args, const std::string& cwd = "",
                      const RunLimits& limits = {});

// Runs any program (argv[0] is looked up in PATH).
RunResult RunProgram(const std::vector<std::string>& argv, const std::string& cwd = "",
                     const RunLimits& limits = {});

bool Contains(const std::string& s, const std::string& part);

// True when the tests (and so the trainsim binary they run) are built with AddressSanitizer.
bool BuiltWithAddressSanitizer();
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace trainsim::test_util

#endif  // TRAINSIM_TESTS_UTIL_RUN_TRAINSIM_H_
