// `trainsim run --trace` on the bundled demo and variants, checked by an independent parser of
// the Trace Event Format (trace_checker.h): slices nest perfectly on every track, every slice
// has args, each pipeline send has one flow arrow to its receive, counters are well formed;
// TP collectives appear per layer, right after the layer's compute; --trace-microbatches
// widens the detail. Perfetto's trace processor is not installable here (no package in the
// registries this project uses), so the format's rules are checked directly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/cli/trace_checker.h"
#include "tests/util/run_trainsim.h"

namespace {

namespace fs = std::filesystem;
using trainsim::test_util::CheckTrace;
using trainsim::test_util::ReadFileOrEmpty;
using trainsim::test_util::RunProgram;
using trainsim::test_util::RunResult;
using trainsim::test_util::TraceCheck;

const fs::path kSource = TRAINSIM_SOURCE_DIR;
const std::string kDemo = (kSource / "scenarios/examples/demo.textproto").string();

// Runs `trainsim run SCENARIO --trace FILE ARGS...` and checks the step trace it wrote.
TraceCheck TraceOf(const std::vector<std::string>& extra, std::string* text = nullptr) {
  static int count = 0;
  const fs::path dir =
      fs::temp_directory_path() /
      ("trainsim_step_trace_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
  fs::create_directories(dir);
  const fs::path file = dir / "step.json";
  std::vector<std::string> argv = {"env", "CI=1",    TRAINSIM_BINARY, "run",
                                   kDemo, "--trace", file.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const RunResult r = RunProgram(argv, "", {.timeout_s = 300});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string t = ReadFileOrEmpty(file.string());
  if (text != nullptr) *text = t;
  fs::remove_all(dir);
  return CheckTrace(t);
}

std::string Errors(const TraceCheck& c) {
  std::string out;
  for (const std::string& e : c.errors) out += e + "\n";
  return out;
}

// The slices of the track named `name` (e.g. "stage 0 / tp 0 / tp").
std::vector<trainsim::test_util::CheckedSlice> Track(const TraceCheck& c, const std::string& name) {
  for (const auto& [key, n] : c.thread_names) {
    if (n == name && c.tracks.count(key)) return c.tracks.at(key);
  }
  return {};
}

// The demo's trace, made and checked once for the tests that read it.
const TraceCheck& DemoTrace() {
  static const TraceCheck c = TraceOf({});
  return c;
}

TEST(StepTraceTest, DemoTracePassesNestingFlowAndCounterRules) {
  const TraceCheck& c = DemoTrace();
  EXPECT_TRUE(c.errors.empty()) << Errors(c);
  // Every track is named by role.
  const std::regex role(
      R"(stage [0-9]+ / tp 0 / (compute|tp|cp|ep|pp|dp|embedding all_reduce)( \([0-9]+\))?)");
  for (const auto& [key, name] : c.thread_names) {
    EXPECT_TRUE(std::regex_match(name, role)) << name;
  }
  // One flow per pipeline send, each from a send to a receive: 1F1B sends every micro-batch's
  // activation forward and its gradient back across each of the pp-1 stage boundaries, per
  // simulated replica (the demo: pp 8, 1536 / dp 2 = 768 micro-batches, one replica simulated
  // for both as they are identical).
  size_t sends = 0, recvs = 0;
  for (const auto& [key, slices] : c.tracks) {
    for (const auto& s : slices) {
      sends += s.name == "pp send";
      recvs += s.name == "pp recv";
    }
  }
  EXPECT_EQ(sends, size_t(2 * 7 * 768));
  EXPECT_EQ(recvs, sends);
  EXPECT_EQ(c.flows, sends);
  // Memory in use on each of the 8 stages, and the utilisation of the links the sends use.
  std::set<int64_t> memory_pids;
  size_t link_counters = 0;
  double max_gib = 0;
  for (const auto& [key, samples] : c.counters) {
    if (key.second == "memory in use (GiB)") {
      memory_pids.insert(key.first);
      for (const auto& [ts, v] : samples) max_gib = std::max(max_gib, v);
    }
    if (key.second.rfind("link ", 0) == 0) ++link_counters;
  }
  EXPECT_EQ(memory_pids.size(), 8u);
  EXPECT_GT(link_counters, 0u);
  // Weights, gradients, optimizer state and the activations in flight stay under the H100's
  // 80 GiB (its HBM: 80 GiB; the demo fits by its memory report).
  EXPECT_GT(max_gib, 0);
  EXPECT_LT(max_gib, 80);
}

TEST(StepTraceTest, DemoTensorParallelCollectivesAppearPerLayerAfterTheLayersCompute) {
  const TraceCheck& c = DemoTrace();
  ASSERT_TRUE(c.errors.empty()) << Errors(c);
  // Stage 0 holds layers 0..11 (96 layers over pp 8). In micro-batch 0's forward each layer's
  // compute slice "L<i>" is followed by its TP collectives: with sequence parallelism an
  // all-gather before and a reduce-scatter after attention and the MLP (Korthikanti et al.
  // 2022, §4.2.2), so 4 per layer, starting no earlier than the layer's compute ends and
  // ending no later than the next layer's compute starts.
  const auto compute = Track(c, "stage 0 / tp 0 / compute");
  const auto tp = Track(c, "stage 0 / tp 0 / tp");
  ASSERT_FALSE(compute.empty());
  ASSERT_FALSE(tp.empty());
  std::map<int, std::pair<int64_t, int64_t>> layer_span;  // forward of micro-batch 0
  int64_t f0_end = 0;
  for (const auto& s : compute) {
    if (s.name == "F0") f0_end = s.end_ns;
    const auto& a = (*s.event)["args"];
    if ((*s.event)["cat"] == "layer" && a.contains("layer") && a["micro_batch"] == 0 &&
        !layer_span.count(a["layer"].get<int>())) {
      layer_span[a["layer"].get<int>()] = {s.start_ns, s.end_ns};
    }
  }
  ASSERT_EQ(layer_span.size(), 12u);
  for (int l = 0; l < 12; ++l) {
    int collectives = 0;
    for (const auto& s : tp) {
      const auto& a = (*s.event)["args"];
      if (!a.contains("layer") || a["layer"] != l || a["micro_batch"] != 0) continue;
      if (s.end_ns > f0_end) continue;  // the backward's
      if (s.start_ns < layer_span[l].second) continue;
      if (l < 11 && s.end_ns > layer_span[l + 1].first) continue;
      ++collectives;
      EXPECT_GT(a["bytes"].get<int64_t>(), 0);
      EXPECT_TRUE(a.contains("algorithm") && a.contains("protocol") && a.contains("busbw_GBps"));
    }
    EXPECT_EQ(collectives, 4) << "layer " << l;
  }
}

TEST(StepTraceTest, TraceMicrobatchesFlagDrawsEveryMicroBatchLayerByLayer) {
  // 16 sequences over dp 2: 8 micro-batches; -1 draws all of them in detail.
  const std::vector<std::string> small = {"--set", "parallelism.global_batch=16"};
  std::vector<std::string> all = small;
  all.insert(all.end(), {"--trace-microbatches", "-1"});
  const TraceCheck one = TraceOf(small), every = TraceOf(all);
  ASSERT_TRUE(one.errors.empty()) << Errors(one);
  ASSERT_TRUE(every.errors.empty()) << Errors(every);
  auto detailed = [](const TraceCheck& c) {
    std::set<int64_t> mbs;
    for (const auto& s : Track(c, "stage 3 / tp 0 / compute")) {
      const auto& a = (*s.event)["args"];
      if ((*s.event)["cat"] == "layer" && a.contains("layer"))
        mbs.insert(a["micro_batch"].get<int64_t>());
    }
    return mbs.size();
  };
  EXPECT_EQ(detailed(one), 1u);
  EXPECT_EQ(detailed(every), 8u);
}

TEST(StepTraceTest, OtherLayoutsNestPerfectlyToo) {
  // Interleaved 1F1B with overlapped sends (concurrent receives from both neighbours), full
  // recomputation, ZeRO-3 gathers beside the gradient reduction, context parallelism.
  const std::vector<std::vector<std::string>> variants = {
      {"--set", "parallelism.global_batch=32", "--set", "parallelism.virtual_stages=2", "--set",
       "parallelism.overlap_p2p_comm=true"},
      {"--set", "parallelism.global_batch=32", "--set", "parallelism.recompute=FULL", "--set",
       "parallelism.zero_stage=3", "--set", "parallelism.pp=1", "--set", "parallelism.dp=16",
       "--trace-microbatches", "2"},
      {"--set", "parallelism.global_batch=32", "--set", "parallelism.cp=2", "--set",
       "parallelism.dp=1"},
  };
  for (const auto& v : variants) {
    const TraceCheck c = TraceOf(v);
    EXPECT_TRUE(c.errors.empty()) << v[3] << "\n" << Errors(c);
    EXPECT_FALSE(c.tracks.empty());
  }
}

// The trace adds up to the text's breakdown for the reported GPU: its tasks' compute_s are run's
// "compute", and their slowed_s with the "slowed by overlapped comm" slices are its "comm-slowed
// compute". The 128K-context example slows compute three ways (CP's K/V exchange inside the
// passes, the DP reduction beside them, the parameter all-gather beside the next forward); the
// trace once counted the first as compute and left out the last.
TEST(StepTraceTest, ComputeAndSlowedComputeAddUpToTheBreakdown) {
  const fs::path dir =
      fs::temp_directory_path() / ("trainsim_step_trace_sum_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "step.json";
  const RunResult r =
      RunProgram({TRAINSIM_BINARY, "run",
                  (kSource / "scenarios/examples/llama3_405b_long_context_h100.textproto").string(),
                  "--trace", file.string(), "--json"},
                 "", {.timeout_s = 300});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json text = nlohmann::json::parse(r.out)["step"]["breakdown_s"];
  const nlohmann::json trace = nlohmann::json::parse(ReadFileOrEmpty(file.string()));
  fs::remove_all(dir);
  double compute = 0, slowed = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e.value("pid", -1) != 0 || e.value("ph", "") != "X") continue;  // GPU 0, the reported
    const nlohmann::json args = e.value("args", nlohmann::json::object());
    compute += args.value("compute_s", 0.0);
    slowed += args.value("slowed_s", 0.0);
    if (e.value("name", "") == "slowed by overlapped comm") slowed += e["dur"].get<double>() / 1e6;
  }
  EXPECT_NEAR(compute, text["compute"].get<double>(), 1e-6);
  EXPECT_NEAR(slowed, text["compute_slowed_by_comm"].get<double>(), 1e-5);
  EXPECT_GT(slowed, 0.1);  // all three kinds are there
}

TEST(StepTraceTest, CheckerRejectsPartialOverlapUnmatchedFlowAndFractionalNanoseconds) {
  const std::string head = R"({"traceEvents":[
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"p"}},
{"ph":"M","name":"thread_name","pid":1,"tid":0,"args":{"name":"t"}},)";
  // [0, 2 µs) and [1 µs, 3 µs): neither disjoint nor nested.
  EXPECT_FALSE(CheckTrace(head + R"(
{"ph":"X","name":"a","pid":1,"tid":0,"ts":0,"dur":2,"args":{"x":1}},
{"ph":"X","name":"b","pid":1,"tid":0,"ts":1,"dur":2,"args":{"x":1}}]})")
                   .errors.empty());
  // Touching and nested slices are fine.
  EXPECT_TRUE(CheckTrace(head + R"(
{"ph":"X","name":"a","pid":1,"tid":0,"ts":0,"dur":2,"args":{"x":1}},
{"ph":"X","name":"b","pid":1,"tid":0,"ts":0.5,"dur":1.5,"args":{"x":1}},
{"ph":"X","name":"c","pid":1,"tid":0,"ts":2,"dur":1,"args":{"x":1}}]})")
                  .errors.empty());
  // A flow start with no end.
  EXPECT_FALSE(CheckTrace(head + R"(
{"ph":"X","name":"a","pid":1,"tid":0,"ts":0,"dur":2,"args":{"x":1}},
{"ph":"s","name":"f","cat":"pp","pid":1,"tid":0,"ts":1,"id":7}]})")
                   .errors.empty());
  // 0.0005 µs is half a nanosecond: rounding, not an integer-ns timestamp.
  EXPECT_FALSE(CheckTrace(head + R"(
{"ph":"X","name":"a","pid":1,"tid":0,"ts":0.0005,"dur":2,"args":{"x":1}}]})")
                   .errors.empty());
  // A slice without args.
  EXPECT_FALSE(CheckTrace(head + R"(
{"ph":"X","name":"a","pid":1,"tid":0,"ts":0,"dur":2}]})")
                   .errors.empty());
}

}  // namespace
