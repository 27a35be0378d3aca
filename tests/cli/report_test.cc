// cli/report in-process: the run trace is drawn from the typed events and the phases (the log's
// wording is deliberately meaningless here), and the shared format helpers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "cli/report/format.h"
#include "cli/report/run_report.h"

namespace trainsim::cli::report {
namespace {

using sim::Time;

run::RunEvent Event(Time at, run::RunEventKind kind, Time duration = Time()) {
  run::RunEvent e;
  e.at = at;
  e.kind = kind;
  e.what = "event " + std::to_string(at.nanos());  // no wording a parser could key on
  e.duration = duration;
  return e;
}

// (name, tid, ts µs, dur µs) of every complete slice, in order.
std::vector<std::tuple<std::string, int, double, double>> Slices(const std::string& trace) {
  std::vector<std::tuple<std::string, int, double, double>> out;
  const nlohmann::json doc = nlohmann::json::parse(trace);
  for (const nlohmann::json& e : doc["traceEvents"]) {
    if (e["ph"] == "X") {
      out.emplace_back(e["name"], e["tid"], e["ts"].get<double>(), e["dur"].get<double>());
    }
  }
  return out;
}

TEST(RunTraceTest, PhasesAndCheckpointsComeFromTypedData) {
  run::RunReport r;
  r.wall_time = Time::Seconds(50);
  r.phases = {{run::RunPhaseKind::kTraining, Time(), Time::Seconds(10)},
              {run::RunPhaseKind::kDetection, Time::Seconds(10), Time::Seconds(20)},
              {run::RunPhaseKind::kRestart, Time::Seconds(20), Time::Seconds(30)},
              {run::RunPhaseKind::kTraining, Time::Seconds(30), Time::Seconds(50)}};
  r.events = {Event(Time::Seconds(10), run::RunEventKind::kFailure),
              Event(Time::Seconds(20), run::RunEventKind::kDetected),
              Event(Time::Seconds(20), run::RunEventKind::kRestart, Time::Seconds(10)),
              Event(Time::Seconds(30), run::RunEventKind::kResumed),
              Event(Time::Seconds(45), run::RunEventKind::kCheckpointWritten, Time::Seconds(5))};
  const std::string trace = RunTraceJson(r, checkpoint::CheckpointPolicy::kSync);
  using S = std::tuple<std::string, int, double, double>;
  EXPECT_EQ(Slices(trace), (std::vector<S>{S{"training", 1, 0, 10e6}, S{"detection", 1, 10e6, 10e6},
                                           S{"restart", 1, 20e6, 10e6},
                                           S{"checkpoint stall (write)", 2, 40e6, 5e6},
                                           S{"training", 1, 30e6, 20e6}}));
  int failures = 0;
  const nlohmann::json doc = nlohmann::json::parse(trace);
  for (const nlohmann::json& e : doc["traceEvents"]) {
    if (e["ph"] == "i") {
      ++failures;
      EXPECT_EQ(e["name"], "event 10000000000");
      EXPECT_EQ(e["ts"].get<double>(), 10e6);
    }
  }
  EXPECT_EQ(failures, 1);
}

TEST(RunTraceTest, BackgroundTransfersAndTheirSnapshotStalls) {
  run::RunReport r;
  r.wall_time = Time::Seconds(100);
  r.checkpoint_costs.snapshot = Time::Seconds(2);
  r.phases = {{run::RunPhaseKind::kTraining, Time(), Time::Seconds(100)}};
  r.events = {Event(Time::Seconds(30), run::RunEventKind::kPeerCopyCompleted, Time::Seconds(8)),
              Event(Time::Seconds(60), run::RunEventKind::kCheckpointCompleted, Time::Seconds(20))};
  using S = std::tuple<std::string, int, double, double>;
  // IN_MEMORY: the snapshot precedes the peer copy.
  EXPECT_EQ(
      Slices(RunTraceJson(r, checkpoint::CheckpointPolicy::kInMemory)),
      (std::vector<S>{S{"peer copy", 4, 22e6, 8e6}, S{"checkpoint stall (snapshot)", 2, 20e6, 2e6},
                      S{"write to storage", 3, 40e6, 20e6}, S{"training", 1, 0, 100e6}}));
  // ASYNC: it precedes the write.
  EXPECT_EQ(
      Slices(RunTraceJson(r, checkpoint::CheckpointPolicy::kAsync)),
      (std::vector<S>{S{"peer copy", 4, 22e6, 8e6}, S{"write to storage", 3, 40e6, 20e6},
                      S{"checkpoint stall (snapshot)", 2, 38e6, 2e6}, S{"training", 1, 0, 100e6}}));
}

TEST(RunTraceTest, TracePathPutsRunBeforeTheExtension) {
  EXPECT_EQ(RunTracePath("trace.json"), "trace.run.json");
  EXPECT_EQ(RunTracePath("trace"), "trace.run.json");
  EXPECT_EQ(RunTracePath("out.d/trace"), "out.d/trace.run.json");
}

TEST(FormatTest, ShareRowIsTheValueAndItsShareOfTheWhole) {
  EXPECT_EQ(ShareRow("compute", Fmt("%10.3f s", 1.5), 1.5, 6, "  %5.1f%%"),
            "  compute                  1.500 s   25.0%\n");
  EXPECT_EQ(ShareRow("idle", "0", 1, 0, "%6.2f%%"), "  idle                0  0.00%\n");
  EXPECT_EQ(Line("x", "y", 6), "  x   y\n");
  EXPECT_EQ(Pct(0.1234), "12.34%");
  EXPECT_EQ(AlignRight("7", 3), "  7");
}

TEST(FormatTest, DurationsAreRoundedToWhatIsMeaningfulForTheirSize) {
  EXPECT_EQ(Duration(0.0), "0 s");
  EXPECT_EQ(Duration(5e-7), "500 ns");       // below a microsecond only
  EXPECT_EQ(Duration(4.52e-5), "45.2 us");   // three significant digits
  EXPECT_EQ(Duration(2.35e-3), "2.35 ms");   // the example
  EXPECT_EQ(Duration(999.7e-6), "1.00 ms");  // rounds up into the next unit, never "1000 us"
  EXPECT_EQ(Duration(12.34), "12.3 s");
  EXPECT_EQ(Duration(251.9), "4m11.9s");     // the example: 4·60 + 11.9 s
  EXPECT_EQ(Duration(599.96), "10m0.0s");    // tenths carried into the minutes
  EXPECT_EQ(Duration(12345.0), "3h25m45s");  // 3·3600 + 25·60 + 45
  EXPECT_EQ(Duration(21 * 86400.0), "21d00h00m");
  EXPECT_EQ(Duration(-90.0), "-1m30.0s");
  EXPECT_EQ(Duration(Time::Millis(2350)), "2.35 s");
  EXPECT_EQ(Human(251.9), Duration(251.9));  // the reports' Human is this convention
}

TEST(FormatTest, GigabytesAreDecimalAndGibibytesBinaryEachLabelled) {
  EXPECT_EQ(Gigabytes(46.1e9), "46.1 GB");
  EXPECT_EQ(Gibibytes(80.0 * 1073741824), "80.0 GiB");
  // The H100's 80 GiB is 85.9 GB: 80 · 2^30 / 1e9 = 85.899...
  EXPECT_EQ(Gigabytes(80.0 * 1073741824), "85.9 GB");
}

// Names from input were printed raw: an ESC sequence cleared the screen, a newline forged a
// report line. Printable escapes controls and bidi overrides and leaves other text untouched.
TEST(FormatTest, PrintableEscapesControlsAndKeepsOrdinaryText) {
  EXPECT_EQ(Printable("GPT-3 175B"), "GPT-3 175B");
  EXPECT_EQ(Printable("caf\xC3\xA9 \xE6\xB5\x8B \xF0\x9F\x9A\x80"),
            "caf\xC3\xA9 \xE6\xB5\x8B \xF0\x9F\x9A\x80");
  EXPECT_EQ(Printable("a\x1b[2Jb"), "a\\e[2Jb");
  EXPECT_EQ(Printable("x\nScenario forged: valid"), "x\\nScenario forged: valid");
  EXPECT_EQ(Printable("t\tr\r"), "t\\tr\\r");
  EXPECT_EQ(Printable(std::string("nul\0", 4)), "nul\\x00");
  EXPECT_EQ(Printable("del\x7f"), "del\\x7F");
  EXPECT_EQ(Printable("c1\xC2\x9B"), "c1\\u{009B}");                      // CSI, the 8-bit ESC [
  EXPECT_EQ(Printable("rtl\xE2\x80\xAEgpj.exe"), "rtl\\u{202E}gpj.exe");  // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(Printable("bad\xFF\xC0"), "bad\\xFF\\xC0");                   // not UTF-8
  EXPECT_EQ(Printable("a\\b"), "a\\\\b");                                 // unambiguous
}

}  // namespace
}  // namespace trainsim::cli::report
