// Output files are written atomically: a run whose output cannot be written
// completely — here the write fails part-way because the file-size limit (RLIMIT_FSIZE) is hit,
// as on a full disk or quota — leaves either the old file or no file, never a truncated one,
// and says so with a non-zero exit code. No temporary file is left behind either.
#include <gtest/gtest.h>

#include <algorithm>
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
using test_util::RunResult;
using test_util::RunTrainsim;

namespace fs = std::filesystem;

const std::string kSource = TRAINSIM_SOURCE_DIR;
const std::string kSmall = kSource + "/scenarios/examples/small.json";

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

}  // namespace
}  // namespace trainsim::hardening
