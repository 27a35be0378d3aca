// Fuzzes what `check` then `run --json` do with a small generated scenario: load and Resolve
// (check), the step simulation, the run simulation and the JSON report. The input's bytes pick
// the scenario's knobs from bounded menus (at most 2 nodes x 8 GPUs, 4 layers, 40 steps, a
// failure rate of at most 1 per node-day) so one execution takes milliseconds, and any bytes
// after the knobs become up to two raw `--set` lines. Properties:
//   - no exception escapes (libFuzzer reports it as a crash) and the JSON dumps;
//   - check ok => run ok, or one clean error: a one-line message, not an internal error;
//   - the run JSON has no NaN/inf and no negative duration or time.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/report/check_report.h"
#include "cli/report/run_report.h"
#include "cli/report/step_report.h"
#include "fuzz/fuzz_util.h"
#include "scenarios/scenario.h"
#include "scenarios/session.h"

namespace {

namespace sc = trainsim::scenarios;

// Reads knobs from the input, byte by byte; 0 once it is used up.
class Knobs {
 public:
  explicit Knobs(std::string_view in) : in_(in) {}
  uint8_t Byte() { return pos_ < in_.size() ? static_cast<uint8_t>(in_[pos_++]) : 0; }
  template <typename T, size_t N>
  const T& Pick(const T (&menu)[N]) {
    return menu[Byte() % N];
  }
  std::string_view Rest() const { return pos_ < in_.size() ? in_.substr(pos_) : ""; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string Scenario(Knobs& k) {
  static constexpr int kGpusPerNode[] = {1, 2, 4, 8};
  static constexpr int kLayers[] = {1, 2, 3, 4};
  static constexpr int kHidden[] = {256, 512, 768};
  static constexpr int kSeq[] = {128, 256, 512};
  static constexpr int kSteps[] = {1, 2, 7, 40};
  static constexpr const char* kPolicy[] = {"SYNC", "ASYNC", "IN_MEMORY"};
  static constexpr const char* kInterval[] = {"30m", "steps:5", "auto", "never", "1ns", "2h"};
  static constexpr const char* kDistribution[] = {"EXPONENTIAL", "WEIBULL"};
  // At most 1 failure per node-day: with 2 nodes the 3650-day guard then bounds a run at ~7,300
  // failures. 20 per node-day (146,000) took 0.9 s in Release but over 15 s under ASan.
  static constexpr double kRate[] = {0, 1e-3, 0.1, 1};
  static constexpr double kShape[] = {0.1, 0.5, 0.75, 1, 3, 100};
  static constexpr double kBandwidth[] = {1e-9, 1e-3, 1, 100, 1e9};
  static constexpr const char* kRecovery[] = {"RESTART_ON_SPARE", "WAIT_FOR_REPAIR", "ELASTIC"};
  static constexpr const char* kFaultKind[] = {"GPU",       "NODE", "NIC",     "LINK",
                                               "STRAGGLER", "HANG", "SOFTWARE"};
  static constexpr const char* kAt[] = {"0s", "1ns", "1s", "1m", "1h", "30d"};
  const int nodes = 1 + k.Byte() % 2;
  const int gpn = k.Pick(kGpusPerNode);
  const int gpus = nodes * gpn;
  const int tp = 1 << (k.Byte() % 4);
  const int pp = 1 << (k.Byte() % 3);
  const int layers = k.Pick(kLayers) * pp;
  const int dp = gpus / (tp * pp) > 0 ? gpus / (tp * pp) : 1;
  const int micro = 1 + k.Byte() % 2;
  const int global = micro * dp * (1 + k.Byte() % 4);
  std::string s = "name: \"fuzz\"\n";
  s += "cluster { gpu: \"H100-SXM-80GB\" nodes: " + std::to_string(nodes) +
       " gpus_per_node: " + std::to_string(gpn) + " spare_nodes: " + std::to_string(k.Byte() % 2) +
       " storage { write_gbyte_per_s: " + Num(k.Pick(kBandwidth)) +
       " read_gbyte_per_s: " + Num(k.Pick(kBandwidth)) + " } }\n";
  s += "model { layers: " + std::to_string(layers) + " hidden: " + std::to_string(k.Pick(kHidden)) +
       " heads: 8 seq_len: " + std::to_string(k.Pick(kSeq)) + " }\n";
  s += "parallelism { tp: " + std::to_string(tp) + " pp: " + std::to_string(pp) +
       " dp: " + std::to_string(dp) + " micro_batch: " + std::to_string(micro) +
       " global_batch: " + std::to_string(global) + " }\n";
  s += "training { steps: " + std::to_string(k.Pick(kSteps)) + " }\n";
  s += std::string("checkpoint { policy: ") + k.Pick(kPolicy) + " interval: \"" +
       k.Pick(kInterval) + "\" }\n";
  s += std::string("recovery { policy: ") + k.Pick(kRecovery) + " }\n";
  s += std::string("failures { enabled: ") + (k.Byte() % 2 ? "true" : "false") +
       " distribution: " + k.Pick(kDistribution) + " node_day_rate: " + Num(k.Pick(kRate)) +
       " weibull_shape: " + Num(k.Pick(kShape)) + " }\n";
  for (int f = k.Byte() % 3; f > 0; --f) {
    const std::string kind = k.Pick(kFaultKind);
    s += "faults { kind: " + kind + " at: \"" + k.Pick(kAt) + "\"";
    if (kind != "SOFTWARE") s += " id: " + std::to_string(k.Byte() % 20);
    if (kind == "STRAGGLER") s += " slowdown: " + Num(1.0 + k.Byte() / 16.0) + " duration: \"1h\"";
    if (kind == "LINK" && k.Byte() % 2) s += " degrade: " + Num((1 + k.Byte() % 4) / 4.0);
    s += " }\n";
  }
  return s;
}

bool IsTimeKey(const std::string& key) {
  auto ends = [&](std::string_view suffix) {
    return key.size() >= suffix.size() &&
           key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends("_s") || ends("_ns") || ends("time") || ends("duration") || key == "at";
}

// No NaN/inf anywhere; no negative value under a key that names a time or a duration.
void CheckNumbers(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) CheckNumbers(it.value(), it.key(), where);
  } else if (j.is_array()) {
    for (const auto& e : j) CheckNumbers(e, key, where);
  } else if (j.is_number_float()) {
    const double v = j.get<double>();
    FUZZ_CHECK(std::isfinite(v), std::string("non-finite ") + key + " in\n" + where);
    FUZZ_CHECK(!(IsTimeKey(key) && v < 0), "negative " + key + " in\n" + where);
  } else if (j.is_number_integer()) {
    FUZZ_CHECK(!(IsTimeKey(key) && j.get<int64_t>() < 0), "negative " + key + " in\n" + where);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Knobs k(std::string_view(reinterpret_cast<const char*>(data), size));
  const std::string text = Scenario(k);
  std::vector<std::string> sets;
  std::string_view rest = k.Rest();
  while (!rest.empty() && sets.size() < 2) {
    const size_t nl = rest.find('\n');
    sets.emplace_back(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  std::string where = text;
  for (const std::string& set : sets) where += "--set " + set + "\n";

  // check
  auto loaded = sc::ParseScenarioText(text, "fuzz.textproto", sets);
  if (!loaded.ok()) return 0;
  auto resolved = sc::Resolve(*loaded);
  FUZZ_CHECK(resolved.ok(), resolved.status().message() + "\n" + where);
  // Bounded: the knobs above are small, but --set may ask for more.
  if (resolved->num_gpus > 64 || resolved->scenario.model().layers() > 16) return 0;
  (void)nlohmann::json::parse(trainsim::cli::report::FormatCheckJson(*resolved));

  // run
  auto clean = [&](const trainsim::Status& st) {
    FUZZ_CHECK(!st.message().empty(), where);
    FUZZ_CHECK(st.message().find('\n') == std::string::npos, st.message() + "\n" + where);
    FUZZ_CHECK(st.code() != trainsim::Status::Code::kInternal, st.message() + "\n" + where);
  };
  sc::StepRequest step_request;
  auto step = sc::SimulateScenarioStep(*resolved, step_request);
  if (!step.ok()) {
    clean(step.status());
    return 0;
  }
  auto run = sc::SimulateScenarioRun(*resolved, step->config, sc::RunRequest{});
  if (!run.ok()) {
    clean(run.status());
    return 0;
  }
  nlohmann::json doc =
      trainsim::cli::report::StepJsonDocument(*resolved, step->config, step->result, step->faulted);
  trainsim::cli::report::AddRunJson(*run, /*events=*/true, doc);
  CheckNumbers(doc, "", where);
  (void)doc.dump(2);  // throws on text that is not UTF-8
  FUZZ_CHECK(run->run.wall_time >= trainsim::sim::Time(), where);
  return 0;
}
