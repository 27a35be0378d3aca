// Output files are written atomically: a run whose output cannot be written
// completely — here the write fails part-way because the file-size limit (RLIMIT_FSIZE) is hit,
// as on a full disk or quota — leaves either the old file or no file, never a truncated one,
// and says so with a non-zero exit code. No temporary file is left behind either.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace trainsim::hardening {
namespace {

using test_util::Contains;
using test_util::ReadFileOrEmpty;
using test_util::RunLimits;
using test_util::RunProgram;
using test_util::RunResult;
using test_util::RunTrainsim;

namespace fs = std::filesystem;

const std::string kSource = TRAINSIM_SOURCE_DIR;
const std::string kSmall = kSource + "/scenarios/examples/small.json";
const std::string kDemo = kSource + "/scenarios/examples/demo.textproto";
const std::string kBinary = TRAINSIM_BINARY;

fs::path ScratchDir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("trainsim_atomic_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// `run --trace` once wrote straight to the target without checking the stream, so a write that
// failed part-way exited 0 and left a truncated trace (4,096 bytes here); traces now go through
// sim::WriteFileAtomically.
TEST(AtomicOutputTest, TraceIsCompleteOrAbsentWhenTheWriteFailsPartWay) {
  fs::path d = ScratchDir("fsize");
  const std::string trace = (d / "trace.json").string();
  RunLimits limits;
  limits.file_size_limit_bytes = 4096;  // the small.json trace is far larger
  RunResult r = RunTrainsim({"run", kSmall, "--trace", trace}, d.string(), limits);
  EXPECT_NE(r.exit_code, 0) << "a trace that could not be written completely exited 0";
  EXPECT_TRUE(Contains(r.err, "trainsim: error: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, trace)) << "the message names the file: " << r.err;
  EXPECT_FALSE(fs::exists(trace)) << "a truncated trace of " << fs::file_size(trace)
                                  << " bytes was left";
  EXPECT_TRUE(Entries(d).empty()) << "left behind: " << (Entries(d).empty() ? "" : Entries(d)[0]);
  fs::remove_all(d);
}

TEST(AtomicOutputTest, AFailedTraceWriteKeepsThePreviousFile) {
  fs::path d = ScratchDir("keep");
  const std::string trace = (d / "trace.json").string();
  { std::ofstream(trace) << "previous trace\n"; }
  RunLimits limits;
  limits.file_size_limit_bytes = 4096;
  RunResult r = RunTrainsim({"run", kSmall, "--trace", trace}, d.string(), limits);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(ReadFileOrEmpty(trace), "previous trace\n");
  EXPECT_EQ(Entries(d), std::vector<std::string>{"trace.json"});
  fs::remove_all(d);
}

TEST(AtomicOutputTest, TraceIntoAMissingDirectoryIsBadInputNamingThePath) {
  fs::path d = ScratchDir("missing");
  const std::string trace = (d / "no/such/dir/trace.json").string();
  RunResult r = RunTrainsim({"run", kSmall, "--trace", trace});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, trace)) << r.err;
  EXPECT_EQ(r.out, "");
  fs::remove_all(d);
}

TEST(AtomicOutputTest, ASuccessfulTraceLeavesOnlyTheFile) {
  fs::path d = ScratchDir("ok");
  const std::string trace = (d / "trace.json").string();
  RunResult r = RunTrainsim({"run", kSmall, "--trace", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The step trace, and whatever companion files run writes, but no temporary file.
  for (const std::string& e : Entries(d)) EXPECT_EQ(e.find(".tmp"), std::string::npos) << e;
  const std::string text = ReadFileOrEmpty(trace);
  ASSERT_FALSE(text.empty());
  // Complete: a Chrome/Perfetto trace is one JSON value, so it ends with its closing bracket.
  const size_t last = text.find_last_not_of(" \n");
  ASSERT_NE(last, std::string::npos);
  EXPECT_TRUE(text[last] == '}' || text[last] == ']') << text.substr(text.size() - 100);
  fs::remove_all(d);
}

// --- outputs that respect what the target is (issue 21) ---

// Every device case writes to the host's /dev/null and /dev/full; this fails loudly if a
// regression ever replaced one with a regular file (as root, the old writer did exactly that).
void ExpectCharacterDevice(const std::string& path) {
  struct stat st;
  ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path;
  ASSERT_TRUE(S_ISCHR(st.st_mode)) << path << " is no longer a character device";
}

int CountOf(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

TEST(AtomicOutputTest, DevNullIsStillACharacterDevice) { ExpectCharacterDevice("/dev/null"); }

TEST(AtomicOutputTest, TraceToDevNullDiscardsItAndCreatesNothingInDev) {
  ExpectCharacterDevice("/dev/null");
  const bool stray_before = fs::exists("/dev/null.run.json");
  RunResult r = RunTrainsim({"run", kSmall, "--trace", "/dev/null"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectCharacterDevice("/dev/null");
  if (!stray_before) {
    EXPECT_FALSE(fs::exists("/dev/null.run.json")) << "a file was made in /dev";
  }
}

TEST(AtomicOutputTest, CsvToDevFullIsNoSpaceExitTwoAndTheDeviceStays) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full here";
  ExpectCharacterDevice("/dev/full");
  RunResult r = RunTrainsim({"run", kSmall, "--trace", "/dev/full"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "No space left on device")) << r.err;
  EXPECT_EQ(CountOf(r.err, "trainsim: error: "), 1) << r.err;
  ExpectCharacterDevice("/dev/full");
  ExpectCharacterDevice("/dev/null");
}

TEST(AtomicOutputTest, CsvToDevStdoutLandsOnStandardOutput) {
  RunResult r = RunTrainsim({"sweep", kSmall, "--top", "1", "--json", "--csv", "/dev/stdout"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The CSV (its header row names the columns, cli/report/sweep_report.cc) comes first, then the
  // JSON document: both reach the pipe, the CSV written directly, not replacing anything.
  EXPECT_EQ(r.out.rfind("index,gpus,tp,pp,dp,", 0), 0u) << r.out.substr(0, 400);
  const size_t json = r.out.find("\n{");
  ASSERT_NE(json, std::string::npos) << r.out.substr(0, 400);
  EXPECT_EQ(r.out.back(), '\n');
  ExpectCharacterDevice("/dev/null");
}

TEST(AtomicOutputTest, CsvThroughASymlinkWritesItsTargetAndKeepsTheLink) {
  fs::path d = ScratchDir("symlink");
  { std::ofstream(d / "real.csv") << "old\n"; }
  fs::create_symlink("real.csv", d / "link.csv");
  RunResult r = RunTrainsim({"sweep", kSmall, "--top", "1", "--csv", (d / "link.csv").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(d / "link.csv")) << "the link was replaced by a file";
  EXPECT_NE(ReadFileOrEmpty((d / "real.csv").string()), "old\n");
  EXPECT_EQ(Entries(d), (std::vector<std::string>{"link.csv", "real.csv"}));
  fs::remove_all(d);
}

TEST(AtomicOutputTest, CsvKeepsTheModeOfTheFileItReplaces) {
  fs::path d = ScratchDir("mode");
  const fs::path csv = d / "out.csv";
  { std::ofstream(csv) << "old\n"; }
  ASSERT_EQ(::chmod(csv.c_str(), 0604), 0);
  RunResult r = RunTrainsim({"sweep", kSmall, "--top", "1", "--csv", csv.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(::stat(csv.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0604u);
  fs::remove_all(d);
}

TEST(AtomicOutputTest, ReadOnlyCsvIsRefusedAndLeftAlone) {
  fs::path d = ScratchDir("readonly");
  const fs::path csv = d / "out.csv";
  { std::ofstream(csv) << "keep\n"; }
  ASSERT_EQ(::chmod(csv.c_str(), 0444), 0);
  RunResult r = RunTrainsim({"sweep", kSmall, "--top", "1", "--csv", csv.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "read-only")) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(ReadFileOrEmpty(csv.string()), "keep\n");
  struct stat st;
  ASSERT_EQ(::stat(csv.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  fs::remove_all(d);
}

TEST(AtomicOutputTest, CsvNamingTheInputScenarioIsRefusedEvenThroughALink) {
  fs::path d = ScratchDir("input");
  const fs::path scenario = d / "s.json";
  fs::copy_file(kSmall, scenario);
  fs::create_symlink("s.json", d / "alias.csv");
  const std::string original = ReadFileOrEmpty(scenario.string());
  for (const fs::path& out : {scenario, d / "alias.csv"}) {
    RunResult r = RunTrainsim({"sweep", scenario.string(), "--top", "1", "--csv", out.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(Contains(r.err, "--csv names the input scenario")) << r.err;
    RunResult t = RunTrainsim({"run", scenario.string(), "--trace", out.string()});
    EXPECT_EQ(t.exit_code, 2) << t.err;
    EXPECT_TRUE(Contains(t.err, "--trace names the input scenario")) << t.err;
  }
  EXPECT_EQ(ReadFileOrEmpty(scenario.string()), original);
  EXPECT_EQ(Entries(d), (std::vector<std::string>{"alias.csv", "s.json"}));
  fs::remove_all(d);
}

// Two outputs of one command naming one file: the one written last replaced the other (a new
// user's `run --trace X.json --html X.json` left X.json an HTML page, exit 0). Refused, whether
// the file exists or not, and nothing is written; different files and devices are fine.
TEST(AtomicOutputTest, TwoOutputsNamingOneFileAreRefused) {
  fs::path d = ScratchDir("twice");
  const fs::path ck = ScratchDir("twice_ck");  // emulate's checkpoint directory
  const std::string x = (d / "x.json").string();
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{"run", kSmall, "--trace", x, "--html", x}, "--html names the same file as --trace"},
      {{"run", kSmall, "--trace", x, "--html", (d / "x.run.json").string()},
       "--html names the same file as --trace (its run trace)"},
      {{"run", kSmall, "--trace", x, "--html", (d / "sub/../x.json").string()},
       "--html names the same file as --trace"},
      {{"sweep", kSmall, "--top", "1", "--csv", x, "--html", x},
       "--html names the same file as --csv"},
      {{"emulate", kSmall, "--no-spawn", "--dir", (ck / "ck").string(), "--trace", x, "--html", x},
       "--html names the same file as --trace"},
  };
  fs::create_directories(d / "sub");
  for (bool exists : {false, true}) {
    if (exists) {
      std::ofstream(x) << "kept";
    }
    for (const Case& c : cases) {
      RunResult r = RunTrainsim(c.args);
      EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.message << ": " << r.err;
      EXPECT_TRUE(Contains(r.err, c.message)) << r.err;
      EXPECT_EQ(Entries(d), exists ? (std::vector<std::string>{"sub", "x.json"})
                                   : std::vector<std::string>{"sub"});
      if (exists) {
        EXPECT_EQ(ReadFileOrEmpty(x), "kept");
      }
    }
  }
  RunResult ok = RunTrainsim({"run", kSmall, "--trace", "/dev/null", "--html", "/dev/null"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  fs::remove_all(d);
  fs::remove_all(ck);
}

// The demo sweep takes seconds to minutes; an unwritable --csv must not wait for it.
TEST(AtomicOutputTest, UnwritableCsvFailsBeforeTheSweepStarts) {
  fs::path d = ScratchDir("early");
  const std::string csv = (d / "no/such/dir/out.csv").string();
  const auto start = std::chrono::steady_clock::now();
  RunResult r = RunTrainsim({"sweep", kDemo, "--tokens", "300e9", "--csv", csv});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, csv)) << r.err;
  // Loading and checking the scenario takes milliseconds; 2 s leaves room for a sanitizer build.
  EXPECT_LT(seconds, 2.0) << "the sweep ran before the path was checked";
  fs::remove_all(d);
}

// --- standard output, exceptions, signals ---

TEST(AtomicOutputTest, JsonOntoAFullStandardOutputIsAnErrorNotExitZero) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full here";
  RunResult r =
      RunProgram({"/bin/sh", "-c", "exec \"$0\" run \"$1\" --json > /dev/full", kBinary, kSmall});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "trainsim: error: cannot write standard output")) << r.err;
  EXPECT_TRUE(Contains(r.err, "No space left on device")) << r.err;
  ExpectCharacterDevice("/dev/full");
}

// A shell leaves SIGXFSZ at its default, which kills the process part-way through a write and
// leaves the temporary file; trainsim ignores it, so the write fails with EFBIG and is reported.
TEST(AtomicOutputTest, FileSizeLimitUnderAShellIsReportedAndLeavesNoTemporary) {
  fs::path d = ScratchDir("xfsz");
  const std::string trace = (d / "trace.json").string();
  // ulimit -f counts 512-byte blocks in sh (POSIX): 8 blocks = 4 KiB, far below the trace.
  RunResult r = RunProgram({"/bin/sh", "-c", "ulimit -f 8; exec \"$0\" run \"$1\" --trace \"$2\"",
                            kBinary, kSmall, trace});
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal;
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "File too large")) << r.err;
  EXPECT_TRUE(Entries(d).empty()) << "left behind: " << (Entries(d).empty() ? "" : Entries(d)[0]);
  fs::remove_all(d);
}

// The CSV is opened before the sweep, so its temporary file exists while the sweep runs: SIGTERM
// then (here as soon as the temporary file appears) must remove it, and the process must still
// die of SIGTERM so the shell or scheduler sees what happened.
TEST(AtomicOutputTest, SigtermDuringASweepRemovesTheOpenCsvTemporary) {
  fs::path d = ScratchDir("sigterm");
  const std::string csv = (d / "out.csv").string();
  const std::string script =
      "\"$0\" sweep \"$1\" --tokens 300e9 --csv \"$2\" & pid=$!; i=0; "
      "while [ $i -lt 600 ] && ! ls \"$3\" | grep -q tmp; do sleep 0.05; i=$((i+1)); done; "
      "kill -TERM $pid; wait $pid; echo \"exit=$?\"";
  RunResult r = RunProgram({"/bin/sh", "-c", script, kBinary, kDemo, csv, d.string()});
  // 128 + 15: the sweep died of SIGTERM (the handler re-raises it after the cleanup).
  EXPECT_TRUE(Contains(r.out, "exit=143")) << r.out << r.err;
  EXPECT_TRUE(Entries(d).empty()) << "left behind: " << (Entries(d).empty() ? "" : Entries(d)[0]);
  fs::remove_all(d);
}

// Text that is not UTF-8 once made nlohmann::json throw out of `run --json` (type_error 316)
// and abort. Whatever the loader does with such a name now, no exception may end the process:
// the top-level handler turns it into one message and a non-zero exit.
TEST(AtomicOutputTest, NoInputEndsTheProcessWithAnUncaughtException) {
  RunResult r = RunTrainsim({"run", kSmall, "--json", "--set", "name=bad\xff\xfe"});
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal << "\n" << r.err;
  if (r.exit_code != 0) {
    EXPECT_EQ(CountOf(r.err, "trainsim: error: "), 1) << r.err;
    EXPECT_FALSE(Contains(r.err, "terminate called")) << r.err;
  }
}

// --- calibrate ---

TEST(AtomicOutputTest, CalibrateRunnerThatFailsAfterWritingSaysTheFileWasLeft) {
  fs::path d = ScratchDir("runner");
  const fs::path runner = d / "runner.sh";
  {
    std::ofstream f(runner);
    // Writes to the -o path it was given (the last argument after -o), then fails.
    f << "#!/bin/sh\nout=\"\"\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=\"$2\"; shift; "
         "done\n[ -n \"$out\" ] && echo partial > \"$out\"\nexit 5\n";
  }
  fs::permissions(runner, fs::perms::owner_all);
  const std::string out = (d / "cal.json").string();
  RunResult r = RunTrainsim({"calibrate", kDemo, "--runner", runner.string(), "-o", out});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  if (fs::exists(out)) {
    EXPECT_FALSE(Contains(r.err, "Nothing was written")) << r.err;
    EXPECT_TRUE(Contains(r.err, "may be incomplete")) << r.err;
  } else {
    EXPECT_TRUE(Contains(r.err, "Nothing was written")) << r.err;
  }
  fs::remove_all(d);
}

}  // namespace
}  // namespace trainsim::hardening
