// `trainsim collective --format nccl-tests` and nccl-tests' -b/-e/-f/-g: the predicted table is
// read by the same parser as published nccl-tests logs (tests/cli/testdata, sources in its
// README), its header lines are nccl-tests' byte for byte, and its numbers follow nccl-tests'
// definitions (count = size / 4 floats, per rank for split buffers; busbw = algbw · 2(n-1)/n
// for all-reduce; the footer's average = mean of the busbw printed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace {

namespace fs = std::filesystem;
using trainsim::test_util::ReadFileOrEmpty;
using trainsim::test_util::RunResult;
using trainsim::test_util::RunTrainsim;

const fs::path kSource = TRAINSIM_SOURCE_DIR;
const std::string kDemo = (kSource / "scenarios/examples/demo.textproto").string();

// A parser of nccl-tests' stdout, written from its format (src/common.cu) and the published
// logs, independent of trainsim's writer.
struct NcclPlace {
  double time_us = 0, algbw = 0, busbw = 0;
  std::string wrong;
};
struct NcclRow {
  uint64_t size = 0, count = 0;
  std::string type, redop;
  int root = 0;
  NcclPlace out_of_place, in_place;
};
struct NcclLog {
  int ngpus = 0;
  std::vector<std::string> columns;
  std::vector<std::string> header_lines;  // the three column header lines, verbatim
  std::vector<NcclRow> rows;
  std::optional<double> avg_busbw;
  std::vector<std::string> unparsed;  // data lines that are not rows of the header's columns
};

std::vector<std::string> Tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

NcclLog ParseNcclTests(const std::string& text) {
  NcclLog log;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      const std::vector<std::string> t = Tokens(line.substr(1));
      if (line.find("nThread") != std::string::npos) {
        for (size_t i = 0; i + 1 < t.size(); ++i) {
          if (t[i] == "nGpus") log.ngpus = std::stoi(t[i + 1]);
        }
      } else if (line.find("out-of-place") != std::string::npos ||
                 line.find("(elements)") != std::string::npos) {
        log.header_lines.push_back(line);
      } else if (!t.empty() && t[0] == "size") {
        log.header_lines.push_back(line);
        log.columns = t;
      } else if (line.find("Avg bus bandwidth") != std::string::npos) {
        log.avg_busbw = std::stod(line.substr(line.find(':') + 1));
      }
      continue;
    }
    const std::vector<std::string> t = Tokens(line);
    if (log.columns.size() != 13 || t.size() != 13) {
      log.unparsed.push_back(line);
      continue;
    }
    NcclRow r;
    r.size = std::stoull(t[0]);
    r.count = std::stoull(t[1]);
    r.type = t[2];
    r.redop = t[3];
    r.root = std::stoi(t[4]);
    r.out_of_place = {std::stod(t[5]), std::stod(t[6]), std::stod(t[7]), t[8]};
    r.in_place = {std::stod(t[9]), std::stod(t[10]), std::stod(t[11]), t[12]};
    log.rows.push_back(r);
  }
  return log;
}

const std::vector<std::string> kColumns = {"size",  "count", "type",  "redop",  "root",
                                           "time",  "algbw", "busbw", "#wrong", "time",
                                           "algbw", "busbw", "#wrong"};

TEST(NcclTestsFormatTest, ParserReadsPublishedLogs) {
  const NcclLog a2a = ParseNcclTests(
      ReadFileOrEmpty((kSource / "tests/cli/testdata/nccl_tests_alltoall_rtx5090.log").string()));
  EXPECT_EQ(a2a.columns, kColumns);
  EXPECT_TRUE(a2a.unparsed.empty());
  ASSERT_EQ(a2a.rows.size(), 1u);
  EXPECT_EQ(a2a.ngpus, 1);
  EXPECT_EQ(a2a.rows[0].size, 33554432u);
  EXPECT_EQ(a2a.rows[0].count, 8388608u);
  EXPECT_EQ(a2a.rows[0].redop, "none");
  EXPECT_EQ(a2a.rows[0].root, -1);
  EXPECT_DOUBLE_EQ(a2a.rows[0].out_of_place.time_us, 19.56);
  EXPECT_EQ(a2a.rows[0].in_place.wrong, "N/A");
  ASSERT_TRUE(a2a.avg_busbw.has_value());
  EXPECT_EQ(*a2a.avg_busbw, 0);

  const NcclLog ar = ParseNcclTests(
      ReadFileOrEmpty((kSource / "tests/cli/testdata/nccl_tests_all_reduce_gb10.log").string()));
  EXPECT_EQ(ar.columns, kColumns);
  EXPECT_TRUE(ar.unparsed.empty());
  ASSERT_EQ(ar.rows.size(), 4u);
  EXPECT_EQ(ar.rows[3].size, 65536u);
  EXPECT_EQ(ar.rows[3].count, 16384u);  // float elements: size / 4
  EXPECT_DOUBLE_EQ(ar.rows[3].in_place.busbw, 1.01);
}

TEST(NcclTestsFormatTest, PredictedAllReduceTableParsesLikeAPublishedLog) {
  // nccl-tests' usual sweep: -b 8 -e 128M -f 2 -g 8 (one DGX node's 8 GPUs).
  const RunResult r = RunTrainsim({"collective", kDemo, "--format", "nccl-tests", "-b", "8", "-e",
                                   "128M", "-f", "2", "-g", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const NcclLog log = ParseNcclTests(r.out);
  EXPECT_EQ(log.columns, kColumns);
  EXPECT_TRUE(log.unparsed.empty());
  EXPECT_EQ(log.ngpus, 8);
  // The three column header lines are nccl-tests' own (the RTX 5090 log's, same version).
  const NcclLog published = ParseNcclTests(
      ReadFileOrEmpty((kSource / "tests/cli/testdata/nccl_tests_alltoall_rtx5090.log").string()));
  EXPECT_EQ(log.header_lines, published.header_lines);
  // 8 B to 128 MiB doubling: 2^3 .. 2^27, 25 rows.
  ASSERT_EQ(log.rows.size(), 25u);
  double busbw_sum = 0;
  for (size_t i = 0; i < log.rows.size(); ++i) {
    const NcclRow& row = log.rows[i];
    EXPECT_EQ(row.size, uint64_t{8} << i);
    EXPECT_EQ(row.count, row.size / 4);
    EXPECT_EQ(row.type, "float");
    EXPECT_EQ(row.redop, "sum");
    EXPECT_EQ(row.root, -1);
    // algbw = size / time (GB = 1e9 B); busbw = algbw · 2(n-1)/n, each printed to 0.01.
    const NcclPlace& p = row.out_of_place;
    EXPECT_NEAR(p.algbw, row.size / (p.time_us * 1e-6) / 1e9, 0.005 + 0.001 * p.algbw);
    EXPECT_NEAR(p.busbw, p.algbw * 2 * 7 / 8, 0.02);
    EXPECT_EQ(p.wrong, "N/A");
    busbw_sum += p.busbw + row.in_place.busbw;
  }
  ASSERT_TRUE(log.avg_busbw.has_value());
  EXPECT_NEAR(*log.avg_busbw, busbw_sum / 50, 0.01);
}

TEST(NcclTestsFormatTest, SplitBufferCollectivesCountElementsPerRank) {
  // nccl-tests' all_gather prints the per-rank count: size / 4 / nranks.
  const RunResult r = RunTrainsim({"collective", kDemo, "--op", "all_gather", "--format",
                                   "nccl-tests", "-b", "1M", "-e", "4M", "-g", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const NcclLog log = ParseNcclTests(r.out);
  ASSERT_EQ(log.rows.size(), 3u);
  for (const NcclRow& row : log.rows) {
    EXPECT_EQ(row.count, row.size / 4 / 8);
    EXPECT_EQ(row.redop, "none");
  }
  EXPECT_EQ(log.rows[0].size, uint64_t{1} << 20);  // nccl-tests' M is MiB
}

// nccl-tests moves whole floats (src/common.cu, setupArgs: count = size / 4), and for the split
// collectives whole 16-byte vectors per rank (all_gather.cu: base = (count / nranks) &
// -(16 / eltSize)); it prints max(send, receive) bytes as the size and takes its bandwidths
// from those bytes. So -b 1000 all_gather over 16 ranks is 250 floats, 15 per rank, rounded to
// 12: 12 · 16 · 4 = 768 bytes; -b 7 all_reduce is 1 float, 4 bytes; sizes under 16 bytes per
// rank move nothing and are left out with a note.
TEST(NcclTestsFormatTest, SizesAreWholeElementsAsNcclTestsMovesThem) {
  const RunResult ag = RunTrainsim({"collective", kDemo, "--op", "all_gather", "--format",
                                    "nccl-tests", "-b", "1000", "-e", "1000", "-g", "16"});
  ASSERT_EQ(ag.exit_code, 0) << ag.err;
  const NcclLog a = ParseNcclTests(ag.out);
  ASSERT_EQ(a.rows.size(), 1u);
  EXPECT_EQ(a.rows[0].size, 768u);
  EXPECT_EQ(a.rows[0].count, 12u);
  const NcclPlace& p = a.rows[0].out_of_place;
  EXPECT_NEAR(p.algbw, 768 / (p.time_us * 1e-6) / 1e9, 0.005 + 0.001 * p.algbw);

  const RunResult ar =
      RunTrainsim({"collective", kDemo, "--format", "nccl-tests", "-b", "7", "-e", "7", "-g", "8"});
  ASSERT_EQ(ar.exit_code, 0) << ar.err;
  const NcclLog r = ParseNcclTests(ar.out);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].size, 4u);
  EXPECT_EQ(r.rows[0].count, 1u);

  // 64 B over 8 ranks is 8 B each: under one vector; 128 and 256 B stay.
  const RunResult small = RunTrainsim({"collective", kDemo, "--op", "all_gather", "--format",
                                       "nccl-tests", "-b", "64", "-e", "256", "-g", "8"});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  const NcclLog s = ParseNcclTests(small.out);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].size, 128u);
  EXPECT_EQ(s.rows[0].count, 4u);
  EXPECT_NE(small.out.find("1 size(s) under 16 bytes per rank left out"), std::string::npos);
}

TEST(NcclTestsFormatTest, RangeOptionsMatchTheLongForms) {
  const RunResult a =
      RunTrainsim({"collective", kDemo, "--json", "-b", "1K", "-e", "64K", "-f", "4", "-g", "16"});
  const RunResult b = RunTrainsim({"collective", kDemo, "--json", "--sizes", "1KiB:64KiB",
                                   "--step-factor", "4", "--group", "16"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(NcclTestsFormatTest, BadFormatAndConflictingGroupAreOneLineErrors) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"collective", kDemo, "--format", "csv"},
        std::vector<std::string>{"collective", kDemo, "-g", "8", "--group", "8"},
        std::vector<std::string>{"collective", kDemo, "--format", "nccl-tests", "--json"},
        std::vector<std::string>{"collective", kDemo, "-b", "1X"}}) {
    const RunResult r = RunTrainsim(args);
    EXPECT_EQ(r.exit_code, 2) << args[2];
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(r.err.rfind("trainsim: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
