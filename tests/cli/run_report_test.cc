// Runs the built `trainsim run` on the bundled demo scenario and checks the run report that
// follows the step report: every `run.*` JSON name, the accounting
// identity, Monte Carlo determinism under a seed, bad input (exit 2 with one message, nothing on
// stdout), the interval scan against Young's and Daly's closed forms, and the run trace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using trainsim::test_util::Contains;
using trainsim::test_util::RunProgram;
using trainsim::test_util::RunResult;

const fs::path kSource = TRAINSIM_SOURCE_DIR;
const std::string kDemo = (kSource / "scenarios/examples/demo.textproto").string();

// With CI=1 (through env(1)) so no progress bar reaches stderr (sim/progress.cc), as before.
RunResult RunTrainsim(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "CI=1", TRAINSIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv);
}

// The demo with a scheduled fault appended (a scenario file in a temporary directory).
std::string DemoWithFault(const std::string& fault_text) {
  std::ifstream in(kDemo);
  std::stringstream ss;
  ss << in.rdbuf();
  static int count = 0;
  const fs::path path =
      fs::temp_directory_path() / ("trainsim_run_report_" + std::to_string(::getpid()) + "_" +
                                   std::to_string(count++) + ".textproto");
  std::ofstream out(path);
  out << ss.str() << "\nfaults { " << fault_text << " }\n";
  return path.string();
}

const char* const kBreakdownKeys[] = {"useful",  "exposed_comm",    "bubble",           "slowdown",
                                      "lost",    "unfinished_step", "checkpoint_stall", "detection",
                                      "restart", "waiting"};

TEST(RunReportTest, JsonHasEveryRunKeyAndKeepsTheStep) {
  RunResult r = RunTrainsim({"run", kDemo, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  // The step report is still there, unchanged in shape.
  ASSERT_TRUE(j.contains("step"));
  EXPECT_TRUE(j["step"]["time_s"].is_number());
  EXPECT_TRUE(j["step"]["mfu"].is_number());
  ASSERT_TRUE(j.contains("run"));
  const json& run = j["run"];
  for (const char* key :
       {"wall_time_s", "useful_compute_fraction", "ettr", "lost_work_s", "cost_usd"}) {
    EXPECT_TRUE(run.contains(key) && run[key].is_number()) << key;
  }
  EXPECT_TRUE(run["failures"].is_number_integer());
  EXPECT_TRUE(run["checkpoints"].is_number_integer());
  ASSERT_TRUE(run["failures_by_cause"].is_object());
  int by_cause = 0;
  for (const auto& [cause, n] : run["failures_by_cause"].items()) by_cause += n.get<int>();
  EXPECT_EQ(by_cause, run["failures"].get<int>());
  for (const char* key : kBreakdownKeys) {
    EXPECT_TRUE(run["breakdown_s"].contains(key) && run["breakdown_s"][key].is_number()) << key;
  }
  // training.duration is 21 days: the job holds its GPUs exactly that long.
  EXPECT_DOUBLE_EQ(run["wall_time_s"].get<double>(), 21 * 86400.0);
  EXPECT_FALSE(j.contains("run_stats"));  // only with --trials
  EXPECT_FALSE(run.contains("events"));   // only with --events
}

TEST(RunReportTest, BreakdownSumsToWallTime) {
  // Also under a failure rate high enough that every category is used.
  for (const std::string rate : {"0.00379", "0.2"}) {
    RunResult r = RunTrainsim({"run", kDemo, "--json", "--set", "failures.node_day_rate=" + rate});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json run = json::parse(r.out)["run"];
    double sum = 0;
    for (const char* key : kBreakdownKeys) sum += run["breakdown_s"][key].get<double>();
    const double wall = run["wall_time_s"].get<double>();
    // Each category is a whole number of nanoseconds printed as seconds: the sum is exact to
    // rounding of ten doubles.
    EXPECT_NEAR(sum, wall, 1e-9 * wall) << rate;
    EXPECT_NEAR(run["useful_compute_fraction"].get<double>(),
                run["breakdown_s"]["useful"].get<double>() / wall, 1e-12);
    EXPECT_GT(run["checkpoints"].get<int>(), 0);
    if (rate == "0.2") {
      // 16 nodes × 0.2 per node-day × 21 days ≈ 67 failures expected.
      EXPECT_GT(run["failures"].get<int>(), 30);
      EXPECT_GT(run["breakdown_s"]["detection"].get<double>(), 0);
      EXPECT_GT(run["breakdown_s"]["restart"].get<double>(), 0);
    }
  }
}

TEST(RunReportTest, TrialsAreReproducibleUnderASeed) {
  const std::vector<std::string> base = {"run", kDemo, "--json", "--trials", "20"};
  auto with_seed = [&](const std::string& seed) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--seed", seed, "--set", "failures.node_day_rate=0.05"});
    return RunTrainsim(a);
  };
  RunResult a = with_seed("7"), b = with_seed("7"), c = with_seed("8");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(a.out, b.out);  // byte-identical
  const json ja = json::parse(a.out), jc = json::parse(c.out);
  EXPECT_NE(ja["run_stats"], jc["run_stats"]);
  const json& stats = ja["run_stats"];
  EXPECT_EQ(stats["trials"], 20);
  for (const char* q : {"wall_time_s", "useful_compute_fraction", "ettr", "cost_usd"}) {
    for (const char* p : {"mean", "p1", "p10", "p50", "p90", "p99"}) {
      ASSERT_TRUE(stats[q].contains(p) && stats[q][p].is_number()) << q << "." << p;
    }
    EXPECT_LE(stats[q]["p1"].get<double>(), stats[q]["p10"].get<double>()) << q;
    EXPECT_LE(stats[q]["p10"].get<double>(), stats[q]["p50"].get<double>()) << q;
    EXPECT_LE(stats[q]["p50"].get<double>(), stats[q]["p90"].get<double>()) << q;
    EXPECT_LE(stats[q]["p90"].get<double>(), stats[q]["p99"].get<double>()) << q;
  }
  // `run` is the first trial in full: the same as a run without --trials.
  RunResult single =
      RunTrainsim({"run", kDemo, "--json", "--seed", "7", "--set", "failures.node_day_rate=0.05"});
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(json::parse(single.out)["run"], ja["run"]);
  // No progress bar off a terminal.
  EXPECT_TRUE(a.err.empty()) << a.err;
}

TEST(RunReportTest, HumanReportShowsTheRunAndItsAccounting) {
  RunResult r = RunTrainsim({"run", kDemo, "--events", "--trials", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part :
       {"where GPU", "run (failure history 0", "wall time", "useful compute", "ETTR", "failures",
        "lost work", "downtime", "checkpoints", "GPU-hours", "cost", "checkpoint stall",
        "total = wall time", "over 5 failure histories", "worst 1%", "events (failure history 0)",
        "checkpoint #1 completed"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part;
  }
}

// The run's "bubble" holds every idle share of a step, not only the pipeline's: a PP 1 job held
// back by its data loader showed "pipeline bubble 53.49%" in the run table while its step
// report gave the pipeline bubble as 0 (a new user's report). The row says what it holds.
TEST(RunReportTest, RunTableCallsAnInputBoundStepsIdleTimeBubbleAndStalls) {
  const std::string low = (kSource / "scenarios/examples/low_utilisation.textproto").string();
  RunResult r = RunTrainsim({"run", low});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t run_table = r.out.find("where the run's wall time went");
  ASSERT_NE(run_table, std::string::npos) << r.out;
  const std::string table = r.out.substr(run_table);
  EXPECT_FALSE(Contains(table, "pipeline bubble")) << table;
  EXPECT_TRUE(Contains(table, "bubble and stalls")) << table;
  EXPECT_TRUE(Contains(r.out.substr(0, run_table), "input stall")) << r.out;
}

// A step of milliseconds printed every breakdown row as "0.000 s" beside non-zero shares (a new
// user's report); the rows now take the step's unit.
TEST(RunReportTest, AStepUnderASecondShowsItsBreakdownInMilliseconds) {
  const std::string small = (kSource / "scenarios/examples/small.json").string();
  RunResult r = RunTrainsim({"run", small, "--set", "model.layers=2", "--set", "model.hidden=256",
                             "--set", "model.heads=8", "--set", "model.seq_len=128", "--set",
                             "training.steps=10000000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("spends the step");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string rows = r.out.substr(at, r.out.find("\n\n", at) - at);
  EXPECT_TRUE(Contains(rows, " ms ")) << rows;
  EXPECT_FALSE(Contains(rows, " s ")) << rows;
}

// The memory total named the GPU's capacity only: with --memory-headroom a peak well under it
// read "46.1 GB of 85.9 GB (DOES NOT FIT)" (a new user's report). It names the headroom too.
TEST(RunReportTest, MemoryTotalNamesTheHeadroomItIsJudgedAgainst) {
  RunResult r = RunTrainsim({"run", kDemo, "--memory-headroom", "40GB", "--allow-oom"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "less 40.0 GB of headroom (DOES NOT FIT)")) << r.out;
  RunResult j = RunTrainsim({"run", kDemo, "--memory-headroom", "40GB", "--allow-oom", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_DOUBLE_EQ(doc["step"]["memory"]["headroom_bytes"].get<double>(), 40e9);
  RunResult plain = RunTrainsim({"run", kDemo});
  EXPECT_FALSE(Contains(plain.out, "headroom")) << plain.out;
}

// A planner reads the bad tail of each quantity: the text's "worst" columns are the low
// percentiles of ETTR and the useful compute (more is better) and the high ones of the rest.
TEST(RunReportTest, MonteCarloWorstColumnsAreTheBadTailOfEachQuantity) {
  const std::vector<std::string> args = {"--trials", "50", "--set", "failures.node_day_rate=0.05"};
  std::vector<std::string> text = {"run", kDemo}, js = {"run", kDemo, "--json"};
  text.insert(text.end(), args.begin(), args.end());
  js.insert(js.end(), args.begin(), args.end());
  const RunResult t = RunTrainsim(text), j = RunTrainsim(js);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json stats = json::parse(j.out)["run_stats"];
  const auto pct = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f%%", 100 * v);
    return std::string(b);
  };
  // "  ETTR   <mean>   <p50>   <p10>   <p1>"
  const size_t table = t.out.find("over 50 failure histories");
  ASSERT_NE(table, std::string::npos) << t.out;
  const size_t at = t.out.find("\n  ETTR ", table);
  ASSERT_NE(at, std::string::npos) << t.out;
  std::istringstream row(t.out.substr(at + 1, t.out.find('\n', at + 1) - at - 1));
  std::string label, mean, p50, worst10, worst1;
  row >> label >> mean >> p50 >> worst10 >> worst1;
  EXPECT_EQ(worst10, pct(stats["ettr"]["p10"].get<double>()));
  EXPECT_EQ(worst1, pct(stats["ettr"]["p1"].get<double>()));
  EXPECT_LT(stats["ettr"]["p1"].get<double>(), stats["ettr"]["p99"].get<double>());
  const size_t f = t.out.find("\n  failures   ", table);
  ASSERT_NE(f, std::string::npos) << t.out;
  std::istringstream frow(t.out.substr(f + 1, t.out.find('\n', f + 1) - f - 1));
  frow >> label >> mean >> p50 >> worst10 >> worst1;
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", stats["failures"]["p99"].get<double>());
  EXPECT_EQ(worst1, b);
}

TEST(RunReportTest, BadInputExitsTwoWithOneMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<std::string> files = {DemoWithFault("kind: GPU id: 37 at: \"30d\""),
                                          DemoWithFault("kind: GPU id: 128 at: \"16h\""),
                                          DemoWithFault("kind: NODE id: 16 at: \"16h\"")};
  std::vector<Case> cases = {
      {{"run", files[0]}, "after the end"},
      {{"run", files[1]}, "GPU id 128 does not exist"},
      {{"run", files[2]}, "NODE id 16 does not exist"},
      {{"run", kDemo, "--set", "checkpoint.interval=0s"}, "checkpoint.interval"},
      {{"run", kDemo, "--set", "checkpoint.interval=steps:0"}, "checkpoint.interval"},
      {{"run", kDemo, "--set", "failures.node_day_rate=-0.1"}, "node_day_rate"},
      {{"run", kDemo, "--set", "cluster.spare_nodes=1000"}, "holds at most"},
      {{"run", kDemo, "--set", "cluster.spare_nodes=-1"}, "spare_nodes"},
      {{"run", kDemo, "--trials", "0"}, "trials"},
  };
  for (const Case& c : cases) {
    RunResult r = RunTrainsim(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.back() << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args.back();
    EXPECT_TRUE(Contains(r.err, "trainsim: error: ")) << r.err;
    EXPECT_TRUE(Contains(r.err, c.message)) << c.message << " not in: " << r.err;
  }
  for (const std::string& f : files) fs::remove(f);
}

// Young (1974) and Daly (2006) from the δ and M the command reports, and the scanned optimum
// against them. With failures this frequent (M = 86,400 / (16 × 2) = 2,700 s) the cost curve is
// sharp enough for 40 failure histories to locate its minimum; Daly's formula is a first-order
// optimum of a renewal model, so the scan's optimum must land within a factor of two of it (the
// grid spans Daly/4 .. 4·Daly, so this is not implied by the grid). Checkpoints are SYNC so δ is
// the plain write time.
TEST(RunReportTest, OptimumIntervalLiesNearDaly) {
  RunResult r = RunTrainsim({"run", kDemo, "--json", "--optimize-checkpoint-interval", "--trials",
                             "40", "--set", "failures.node_day_rate=2", "--set",
                             "failures.distribution=EXPONENTIAL", "--set", "checkpoint.policy=SYNC",
                             "--set", "training.duration=3d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json opt = json::parse(r.out)["checkpoint_interval"];
  const double delta = opt["delta_s"].get<double>(), m = opt["mtbf_s"].get<double>();
  EXPECT_NEAR(m, 86400.0 / (16 * 2), 1e-6);
  EXPECT_NEAR(opt["young_s"].get<double>(), std::sqrt(2 * delta * m), 1e-6);
  const double x = delta / (2 * m);
  const double daly = std::sqrt(2 * delta * m) * (1 + std::sqrt(x) / 3 + x / 9) - delta;
  EXPECT_NEAR(opt["daly_s"].get<double>(), daly, 1e-6 * daly);
  ASSERT_EQ(opt["scan"].size(), 21u);
  const double best = opt["optimum_s"].get<double>();
  EXPECT_GT(best, daly / 2);
  EXPECT_LT(best, daly * 2);
}

TEST(RunReportTest, TraceWritesTheStepAndTheRunTimeline) {
  const fs::path dir =
      fs::temp_directory_path() / ("trainsim_run_trace_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path step = dir / "t.json";
  RunResult r = RunTrainsim({"run", kDemo, "--trace", step.string(), "--set",
                             "failures.node_day_rate=0.1", "--set", "cluster.spare_nodes=0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(dir / "t.run.json");
  ASSERT_TRUE(in.good());
  const json trace = json::parse(in);
  // The phases tile the run: training, detection, waiting and restart slices on the phase
  // track add up to the wall time (21 days), and failures are marked.
  double phases_us = 0;
  bool failure_mark = false, detection = false, stall = false;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == 1) {
      phases_us += e["dur"].get<double>();
      if (e["name"] == "detection") detection = true;
    }
    if (e["ph"] == "X" && e["tid"] == 2) stall = true;
    if (e["ph"] == "i") failure_mark = true;
  }
  EXPECT_NEAR(phases_us, 21 * 86400e6, 1.0);
  EXPECT_TRUE(failure_mark);
  EXPECT_TRUE(detection);
  EXPECT_TRUE(stall);
  EXPECT_TRUE(fs::exists(step));
  fs::remove_all(dir);
}

}  // namespace

// A fine-grained MoE model's step carries the validation's warning (every published run of one
// took longer than predicted, docs/validation.md); a dense model's and an eight-expert Mixtral's
// do not. In the table and in --json.
TEST(RunReportTest, FineGrainedMoeStepSaysItIsOptimisticOthersDoNot) {
  const std::string qwen =
      (kSource / "scenarios/validation/bridge_h100_qwen3_30b_a3b_fp8.textproto").string();
  const std::string mixtral =
      (kSource / "scenarios/examples/mixtral_8x22b_h100.textproto").string();
  RunResult text = RunTrainsim({"run", qwen});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Contains(text.out, "fidelity")) << text.out;
  EXPECT_TRUE(Contains(text.out, "(128 experts)")) << text.out;
  RunResult js = RunTrainsim({"run", qwen, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json j = json::parse(js.out);
  ASSERT_TRUE(j.contains("fidelity"));
  EXPECT_TRUE(Contains(j["fidelity"].get<std::string>(), "optimistic"));
  // The HTML report shows it as a note (where the web libraries are installed).
  const fs::path html =
      fs::temp_directory_path() / ("trainsim_fidelity_" + std::to_string(::getpid()) + ".html");
  RunResult page = RunTrainsim({"run", qwen, "--html", html.string()});
  if (page.exit_code == 0) {
    std::ifstream in(html);
    std::stringstream body;
    body << in.rdbuf();
    EXPECT_TRUE(Contains(body.str(), "<p class=\"note\">fine-grained MoE (128 experts)"));
    fs::remove(html);
  } else {
    EXPECT_TRUE(Contains(page.err, "vega")) << page.err;  // only the libraries may be missing
  }
  for (const std::string& other : {kDemo, mixtral}) {
    RunResult r = RunTrainsim({"run", other});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(Contains(r.out, "fidelity")) << other;
    RunResult rj = RunTrainsim({"run", other, "--json"});
    ASSERT_EQ(rj.exit_code, 0) << rj.err;
    EXPECT_FALSE(json::parse(rj.out).contains("fidelity")) << other;
  }
}

// The failure causes' count column ran into the cause at four digits ("1544GPU"): it is as
// wide as the widest count and a space. The 16,384-GPU sweep example's run has over 1,000 GPU
// failures (its JSON gives the counts the text must show).
TEST(RunReportTest, FailureCountsOfFourDigitsStaySeparateFromTheirCause) {
  const std::string path = (kSource / "scenarios/examples/llama3_405b_sweep.textproto").string();
  RunResult j = RunTrainsim({"run", path, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  RunResult t = RunTrainsim({"run", path});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  bool four_digits = false;
  const json doc = json::parse(j.out);
  ASSERT_TRUE(doc.contains("run")) << j.out.substr(0, 300);
  for (const auto& [cause, n] : doc["run"]["failures_by_cause"].items()) {
    const std::string count = std::to_string(n.get<int>());
    four_digits |= count.size() >= 4;
    EXPECT_NE(t.out.find(" " + count + " "), std::string::npos) << cause << " " << count;
  }
  EXPECT_TRUE(four_digits) << "the example no longer has a count of 1,000 or more";
}
