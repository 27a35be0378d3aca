#include "cli/report/html_pages.h"

#include <algorithm>
#include <set>
#include <utility>

#include "cli/report/html_spec.h"

namespace trainsim::cli::report {
namespace {

using nlohmann::json;

constexpr double kHour = 3600;  // seconds
constexpr double kGB = 1e9;     // bytes: the GB the text reports print (cli/report/format.h)

// ---- run ----

json StageBreakdownSpec(const json& stages) {
  std::set<std::string> nonzero;
  for (const json& s : stages) {
    for (const auto& [part, v] : s.items()) {
      if (v.get<double>() != 0) nonzero.insert(part);
    }
  }
  json values = json::array();
  for (size_t i = 0; i < stages.size(); ++i) {
    for (const auto& [part, v] : stages[i].items()) {
      if (nonzero.count(part)) values.push_back({{"stage", i}, {"part", part}, {"seconds", v}});
    }
  }
  return Spec(R"vl({"width": 760, "height": {"step": 24}, "mark": "bar",
    "encoding": {
      "y": {"field": "stage", "type": "ordinal", "title": "pipeline stage"},
      "x": {"field": "seconds", "type": "quantitative", "title": "seconds per step"},
      "color": {"field": "part", "type": "nominal", "title": "where the time goes"},
      "tooltip": [{"field": "stage"}, {"field": "part"},
                  {"field": "seconds", "type": "quantitative", "format": ".4f"}]}})vl",
              values);
}

json MemorySpec(const parallelism::MemoryReport& memory, json* per_stage) {
  json values = json::array();
  for (size_t i = 0; i < memory.per_stage.size(); ++i) {
    const parallelism::MemoryBreakdown& m = memory.per_stage[i];
    // The peak holds the larger of activations (+ gathered FSDP units) and the optimizer step's
    // gradient copies (parallelism/memory.h), so the bar adds up to total().
    const bool activations = m.activations + m.gathered >= m.step_grads;
    std::vector<std::pair<const char*, double>> parts = {
        {"weights", m.weights},
        {"gradients", m.gradients},
        {"optimizer", m.optimizer},
        {"overhead", m.overhead},
        {"activations", activations ? m.activations : 0},
        {"fsdp_gathered", activations ? m.gathered : 0},
        {"optimizer_step_grads", activations ? 0 : m.step_grads}};
    json row = {{"stage", i}, {"total_bytes", m.total()}};
    for (const auto& [name, bytes] : parts) {
      row[std::string(name) + "_bytes"] = bytes;
      if (bytes > 0) values.push_back({{"stage", i}, {"category", name}, {"gb", bytes / kGB}});
    }
    per_stage->push_back(row);
  }
  json spec = Spec(R"vl({"width": 760, "height": {"step": 24},
    "layer": [
      {"mark": "bar", "encoding": {
        "y": {"field": "stage", "type": "ordinal", "title": "pipeline stage"},
        "x": {"field": "gb", "type": "quantitative", "title": "GB per GPU (1 GB = 1e9 bytes)"},
        "color": {"field": "category", "type": "nominal", "title": "memory"},
        "tooltip": [{"field": "stage"}, {"field": "category"},
                    {"field": "gb", "type": "quantitative", "format": ".2f", "title": "GB"}]}},
      {"mark": {"type": "rule", "color": "#cf222e", "strokeWidth": 2},
       "encoding": {"x": {"field": "capacity_gb", "type": "quantitative"}}},
      {"mark": {"type": "text", "color": "#cf222e", "align": "right", "dx": -4, "dy": -4,
                "baseline": "bottom", "y": 0},
       "encoding": {"x": {"field": "capacity_gb", "type": "quantitative"},
                    "text": {"field": "label"}}}]})vl",
                   values);
  const json capacity = {{{"capacity_gb", memory.capacity_bytes / kGB}, {"label", "capacity"}}};
  spec["layer"][1]["data"] = {{"values", capacity}};
  spec["layer"][2]["data"] = {{"values", capacity}};
  return spec;
}

// The run's phases as bars, its checkpoints as ticks and its failures as triangles, in hours;
// `domain_h` (when given) zooms the x axis.
json TimelineSpec(const json& phases, const json& marks,
                  std::optional<std::pair<double, double>> domain_h) {
  json spec = json::parse(R"vl({"width": 760, "height": 110,
    "encoding": {
      "y": {"field": "lane", "type": "nominal", "title": null,
            "sort": ["phases", "checkpoints", "failures"]},
      "color": {"field": "kind", "type": "nominal", "title": "",
                "scale": {"domain": ["training", "detection", "restart", "waiting",
                                     "checkpoint", "failure"],
                          "range": ["#4c78a8", "#f58518", "#e45756", "#b279a2", "#54a24b",
                                    "#000000"]}}},
    "layer": [
      {"mark": {"type": "bar", "clip": true},
       "params": [{"name": "zoom", "select": {"type": "interval", "encodings": ["x"]},
                   "bind": "scales"}],
       "encoding": {"x": {"field": "start_h", "type": "quantitative",
                          "title": "hours since the start of the run"},
                    "x2": {"field": "end_h"},
                    "tooltip": [{"field": "kind"},
                                {"field": "start_h", "format": ".3f", "title": "start (h)"},
                                {"field": "end_h", "format": ".3f", "title": "end (h)"}]}},
      {"mark": {"type": "tick", "clip": true, "thickness": 1},
       "transform": [{"filter": "datum.lane === 'checkpoints'"}],
       "encoding": {"x": {"field": "at_h", "type": "quantitative"},
                    "tooltip": [{"field": "what"}, {"field": "at_h", "format": ".3f"}]}},
      {"mark": {"type": "point", "shape": "triangle-down", "filled": true, "size": 90,
                "clip": true},
       "transform": [{"filter": "datum.lane === 'failures'"}],
       "encoding": {"x": {"field": "at_h", "type": "quantitative"},
                    "tooltip": [{"field": "what"}, {"field": "at_h", "format": ".3f"}]}}]})vl");
  spec["layer"][0]["data"] = {{"values", phases}};
  spec["layer"][1]["data"] = {{"values", marks}};
  spec["layer"][2]["data"] = {{"values", marks}};
  if (domain_h) {
    spec["layer"][0]["encoding"]["x"]["scale"] = {{"domain", {domain_h->first, domain_h->second}}};
    spec["layer"][0].erase("params");  // one interactive view is enough
  }
  return spec;
}

void AddTimelinePlots(const run::RunReport& r, HtmlPage* page) {
  json phases = json::array(), marks = json::array();
  for (const run::RunPhase& p : r.phases) {
    phases.push_back({{"lane", "phases"},
                      {"kind", run::RunPhaseName(p.kind)},
                      {"start_h", p.start.seconds() / kHour},
                      {"end_h", p.end.seconds() / kHour}});
  }
  for (const run::RunEvent& e : r.events) {
    const bool checkpoint = e.kind == run::RunEventKind::kCheckpointWritten ||
                            e.kind == run::RunEventKind::kCheckpointCompleted;
    if (!checkpoint && e.kind != run::RunEventKind::kFailure) continue;
    marks.push_back({{"lane", checkpoint ? "checkpoints" : "failures"},
                     {"kind", checkpoint ? "checkpoint" : "failure"},
                     {"at_h", e.at.seconds() / kHour},
                     {"what", e.what}});
  }
  page->extra["timeline"] = {{"phases", phases}, {"marks", marks}};
  page->plots.push_back(
      {"The run's timeline",
       "Failure history 0: training (checkpoint stalls included), failure detection, waiting for "
       "replacements and restarts as bars; checkpoints as ticks, failures as triangles. Drag or "
       "scroll to zoom.",
       TimelineSpec(phases, marks, std::nullopt)});
  if (r.failure_records.empty()) return;
  const run::FailureRecord& f = r.failure_records.front();
  const sim::Time end = f.resumed_at == sim::Time::Max() ? r.wall_time : f.resumed_at;
  // One hour either side of the first incident: enough to see the checkpoint it restored from
  // at the demo's 1 h interval and the training that follows the restart.
  const double lo = std::max(0.0, f.at.seconds() / kHour - 1);
  const double hi = std::min(r.wall_time.seconds(), end.seconds() + kHour) / kHour;
  page->plots.push_back({"The first failure, up close",
                         "The same timeline from an hour before the first failure (" + f.what +
                             ") to an hour after training resumed.",
                         TimelineSpec(phases, marks, std::pair{lo, hi})});
}

json IntervalSpec(const json& scan, const json& run) {
  // Expected cost of the run's steps at each interval: wall time per step kept (the scan's
  // objective) × steps × the run's cost per second of wall time (GPUs × price, constant).
  const double usd_per_s = run["cost_usd"].get<double>() / run["wall_time_s"].get<double>();
  const double steps = run["steps"].get<double>();
  json values = json::array();
  for (const json& p : scan["scan"]) {
    values.push_back({{"interval_min", p["interval_s"].get<double>() / 60},
                      {"cost_usd", p["wall_time_per_step_s"].get<double>() * steps * usd_per_s},
                      {"useful_compute_fraction", p["useful_compute_fraction"]}});
  }
  json spec = Spec(R"vl({"width": 760, "height": 300,
    "layer": [
      {"mark": {"type": "line", "color": "#57606a", "point": {"color": "#57606a"}},
       "encoding": {
         "x": {"field": "interval_min", "type": "quantitative",
               "scale": {"type": "log", "nice": false},
               "title": "checkpoint interval (minutes of training, log scale)"},
         "y": {"field": "cost_usd", "type": "quantitative", "scale": {"zero": false},
               "title": "expected cost of the run's steps (USD)"},
         "tooltip": [{"field": "interval_min", "format": ".1f"},
                     {"field": "cost_usd", "format": ",.0f"},
                     {"field": "useful_compute_fraction", "format": ".4f"}]}},
      {"mark": {"type": "rule", "strokeDash": [4, 3], "strokeWidth": 2},
       "encoding": {"x": {"field": "at_min", "type": "quantitative"},
                    "color": {"field": "mark", "type": "nominal", "title": "interval",
                              "scale": {"domain": ["Young", "Daly", "optimum (fit)"],
                                        "range": ["#e45756", "#f58518", "#2da44e"]}},
                    "tooltip": [{"field": "mark"},
                                {"field": "at_min", "format": ".2f", "title": "minutes"}]}}]})vl",
                   values);
  const json rules = {
      {{"mark", "Young"}, {"at_min", scan["young_s"].get<double>() / 60}},
      {{"mark", "Daly"}, {"at_min", scan["daly_s"].get<double>() / 60}},
      {{"mark", "optimum (fit)"}, {"at_min", scan["optimum_s"].get<double>() / 60}}};
  spec["layer"][1]["data"] = {{"values", rules}};
  return spec;
}

}  // namespace

HtmlPage RunHtmlPage(const json& doc, const step::StepResult& step,
                     const scenarios::RunOutcome& run, const std::optional<json>& interval_scan) {
  HtmlPage page;
  page.title = "trainsim run — " + doc.value("layout", std::string());
  page.subtitle = "One step (" + step.report_gpu_place + ") and the whole run with its " +
                  "checkpoints and failures.";
  page.report = doc;
  if (doc.contains("fidelity")) page.notes.push_back(doc["fidelity"].get<std::string>());
  page.figures = {
      Fig("step_time_s", "step time", "/step/time_s", "duration"),
      Fig("mfu", "MFU", "/step/mfu", "pct"),
      Fig("tokens_per_s", "tokens / s", "/step/tokens_per_s", "int"),
      Fig("peak_memory", "peak memory / GPU", "/step/memory/peak_bytes_per_gpu", "bytes"),
      Fig("wall_time_s", "wall time", "/run/wall_time_s", "duration"),
      Fig("useful_compute_fraction", "useful compute fraction", "/run/useful_compute_fraction",
          "pct"),
      Fig("ettr", "ETTR", "/run/ettr", "pct"),
      Fig("failures", "failures", "/run/failures", "int"),
      Fig("cost_usd", "cost", "/run/cost_usd", "usd")};
  page.plots.push_back({"Step time per pipeline stage",
                        "Where one step's time goes on each stage (TP rank 0 of the reported "
                        "replica). The stages' bars are equally long: the step ends together.",
                        StageBreakdownSpec(doc["step"]["stage_breakdown_s"])});
  json per_stage = json::array();
  page.plots.push_back({"Memory per stage vs capacity",
                        "Peak bytes per GPU on each pipeline stage by category; the red rule is "
                        "the GPU's memory capacity.",
                        MemorySpec(step.memory, &per_stage)});
  page.extra["memory_per_stage"] = per_stage;
  AddTimelinePlots(run.run, &page);
  const json* scan = doc.contains("checkpoint_interval") ? &doc["checkpoint_interval"]
                     : interval_scan                     ? &*interval_scan
                                                         : nullptr;
  if (scan != nullptr) {
    if (!doc.contains("checkpoint_interval")) page.extra["checkpoint_interval"] = *scan;
    page.plots.push_back(
        {"Expected cost vs checkpoint interval",
         "Monte Carlo over " + std::to_string(scan->value("trials", 0)) +
             " failure histories per interval: the wall time per step kept, priced at the run's "
             "cost per hour, for the run's steps. Young's and Daly's intervals and the fitted "
             "optimum are marked.",
         IntervalSpec(*scan, doc["run"])});
  } else {
    page.notes.push_back(
        "No failures are modelled, so there is no checkpoint interval trade-off to plot.");
  }
  return page;
}

}  // namespace trainsim::cli::report
