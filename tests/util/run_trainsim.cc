#include "tests/util/run_trainsim.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

// g++ defines __SANITIZE_ADDRESS__ under -fsanitize=address; clang 14 only answers
// __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define TRAINSIM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRAINSIM_TEST_ASAN 1
#endif
#endif
#ifndef TRAINSIM_TEST_ASAN
#define TRAINSIM_TEST_ASAN 0
#endif

namespace trainsim::test_util {

namespace {

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

}  // namespace

RunResult RunProgram(const std::vector<std::string>& argv, const std::string& cwd,
                     const RunLimits& limits) {
  RunResult r;
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return r;
  pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    const std::string dir = cwd.empty() ? std::string(TRAINSIM_SOURCE_DIR) : cwd;
    if (chdir(dir.c_str()) != 0) _exit(126);
    if (limits.file_size_limit_bytes >= 0) {
      signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead of killing the process
      rlimit rl{static_cast<rlim_t>(limits.file_size_limit_bytes),
                static_cast<rlim_t>(limits.file_size_limit_bytes)};
      setrlimit(RLIMIT_FSIZE, &rl);
    }
#if TRAINSIM_TEST_ASAN
    // AddressSanitizer reserves terabytes of address space for its shadow memory, so an
    // RLIMIT_AS cap stops every sanitized child at start-up; memory limits are checked in the
    // Release build. And Open MPI leaves allocations at exit that LeakSanitizer cannot attribute
    // (its plugins are unloaded first), so processes started through mpirun skip the leak check;
    // trainsim run directly keeps it.
    const std::string launcher = std::filesystem::path(argv[0]).filename().string();
    if (launcher == "mpirun" || launcher == "mpiexec" || launcher == "orterun") {
      const char* asan = std::getenv("ASAN_OPTIONS");
      const std::string opts = std::string(asan != nullptr ? asan : "") + ":detect_leaks=0";
      setenv("ASAN_OPTIONS", opts.c_str(), 1);
    }
#else
    if (limits.memory_limit_bytes >= 0) {
      rlimit rl{static_cast<rlim_t>(limits.memory_limit_bytes),
                static_cast<rlim_t>(limits.memory_limit_bytes)};
      setrlimit(RLIMIT_AS, &rl);
    }
#endif
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  const double deadline = NowS() + limits.timeout_s;
  char buf[65536];
  while (open_fds > 0) {
    const double left = deadline - NowS();
    if (left <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  return r;
}

RunResult RunTrainsim(const std::vector<std::string>& args, const std::string& cwd,
                      const RunLimits& limits) {
  std::vector<std::string> argv = {TRAINSIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv, cwd, limits);
}

bool BuiltWithAddressSanitizer() { return TRAINSIM_TEST_ASAN != 0; }

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace trainsim::test_util
