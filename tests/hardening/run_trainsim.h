// Runs the built `trainsim` binary for the hardening tests: exit code (or the signal that killed
// it), stdout and stderr, with an optional wall-clock limit so a hang fails a test instead of
// stalling ctest, and an optional file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) to make a write
// fail part-way.
#ifndef TRAINSIM_TESTS_HARDENING_RUN_TRAINSIM_H_
#define TRAINSIM_TESTS_HARDENING_RUN_TRAINSIM_H_

#include <string>
#include <vector>

namespace trainsim::hardening {

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
  long memory_limit_bytes = -1;     // RLIMIT_AS; -1: none
};

// Runs TRAINSIM_BINARY with `args` in `cwd` (default: the source tree).
RunResult RunTrainsim(const std::vector<std::string>& args, const std::string& cwd = "",
                      const RunLimits& limits = {});

// Runs any program (argv[0] is looked up in PATH).
RunResult RunProgram(const std::vector<std::string>& argv, const std::string& cwd = "",
                     const RunLimits& limits = {});

bool Contains(const std::string& s, const std::string& part);
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace trainsim::hardening

#endif  // TRAINSIM_TESTS_HARDENING_RUN_TRAINSIM_H_
