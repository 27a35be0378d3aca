// The HTML page of `emulate` (html_pages.h): what the real processes measured next to the run
// simulation's prediction, and when each injected fault struck, was detected and recovered.
#include <string>

#include "cli/report/html_pages.h"
#include "cli/report/html_spec.h"

namespace trainsim::cli::report {
namespace {

using nlohmann::json;

// One measured/predicted pair of the comparison table (the JSON's own fields).
void AddPair(json* values, const std::string& quantity, const json& measured,
             const json& predicted) {
  values->push_back({{"quantity", quantity}, {"side", "measured"}, {"value", measured}});
  values->push_back({{"quantity", quantity}, {"side", "predicted"}, {"value", predicted}});
}

}  // namespace

HtmlPage EmulateHtmlPage(const json& doc) {
  HtmlPage page;
  const json& plan = doc.at("plan");
  const json& measured = doc.at("measured");
  page.title = "trainsim emulate — " + std::to_string(plan.value("workers", 0)) + " workers, " +
               std::to_string(plan.value("steps", 0)) + " steps";
  page.subtitle = "Real worker processes (TCP " + plan.value("algorithm", std::string()) +
                  " all-reduce, " + plan.value("checkpoint_policy", std::string()) +
                  " checkpoints, " + plan.value("recovery_policy", std::string()) +
                  ") against the run simulation's prediction of the same scaled scenario.";
  page.report = doc;
  const bool has_prediction = doc.contains("predicted") && doc["predicted"].contains("wall_time_s");
  page.figures = {Fig("measured_wall", "measured wall time", "/measured/wall_time_s", "duration")};
  if (has_prediction) {
    page.figures.push_back(
        Fig("predicted_wall", "predicted wall time", "/predicted/wall_time_s", "duration"));
    page.figures.push_back(Fig("difference_pct", "difference (%)", "/difference_pct", "num"));
  } else {
    page.notes.push_back("the prediction failed: " +
                         doc.value("predicted", json::object()).value("error", std::string()));
  }
  page.figures.push_back(
      Fig("processes", "processes started, all reaped", "/measured/processes_started", "int"));
  if (!doc.value("state_identical", false)) {
    page.notes.push_back("the final state DIFFERS from the fault-free reference");
  }
  json pairs = json::array();
  if (has_prediction) {
    const json& predicted = doc.at("predicted");
    int64_t redone = 0;
    for (const json& f : doc.at("faults")) redone += f.value("lost_steps", int64_t{0});
    AddPair(&pairs, "wall time (s)", measured.at("wall_time_s"), predicted.at("wall_time_s"));
    AddPair(&pairs, "steps executed", measured.at("steps_executed"),
            predicted.at("steps_executed"));
    AddPair(&pairs, "steps redone", redone, predicted.at("steps_rolled_back"));
    AddPair(&pairs, "checkpoints committed", measured.at("checkpoints"),
            predicted.at("checkpoints"));
    AddPair(&pairs, "restart (s)", measured.at("restart_s"), predicted.at("restart_s"));
    page.extra["comparison"] = pairs;
    page.plots.push_back(
        {"Measured vs predicted",
         "Each panel is one line of the text output: what the processes did (measured) and what "
         "the run simulation predicts when fed the emulation's measured step, checkpoint and "
         "restart costs. Steps redone differ when faults fall at other points between "
         "checkpoints (docs/emulate.md).",
         Spec(R"vl({"columns": 5,
    "facet": {"field": "quantity", "type": "nominal", "title": null,
              "sort": ["wall time (s)", "steps executed", "steps redone",
                       "checkpoints committed", "restart (s)"]},
    "spec": {"width": 120, "height": 200, "mark": "bar",
      "encoding": {
        "x": {"field": "side", "type": "nominal", "title": null},
        "y": {"field": "value", "type": "quantitative", "title": null},
        "color": {"field": "side", "type": "nominal", "title": null},
        "tooltip": [{"field": "quantity"}, {"field": "side"},
                    {"field": "value", "format": ".4~f"}]}},
    "resolve": {"scale": {"y": "independent"}}})vl",
              pairs)});
  }
  // The faults on the wall clock: struck → detected (detection), detected → training resumed
  // (restart, which holds the restore), and the run's end.
  json segments = json::array();
  for (const json& f : doc.at("faults")) {
    const std::string row =
        f.value("kind", std::string()) + " rank " + std::to_string(f.value("rank", 0));
    const double at = f.value("at_s", 0.0);
    const double detected = at + f.value("detected_after_s", 0.0);
    segments.push_back({{"fault", row},
                        {"phase", "detection (" + f.value("mechanism", std::string()) + ")"},
                        {"start_s", at},
                        {"end_s", detected},
                        {"lost_steps", f.value("lost_steps", 0)}});
    segments.push_back({{"fault", row},
                        {"phase", "restart"},
                        {"start_s", detected},
                        {"end_s", detected + f.value("restart_s", 0.0)},
                        {"lost_steps", f.value("lost_steps", 0)}});
  }
  page.extra["fault_timeline"] = segments;
  if (segments.empty()) {
    page.notes.push_back("no fault was injected, so there is no fault timeline");
  } else {
    json spec = Spec(R"vl({"width": 760, "height": 200,
    "layer": [
      {"mark": {"type": "bar", "height": 14},
       "encoding": {
         "x": {"field": "start_s", "type": "quantitative", "title": "wall time (s)",
               "axis": {"tickCount": 12}},
         "x2": {"field": "end_s"},
         "y": {"field": "fault", "type": "nominal", "title": null},
         "color": {"field": "phase", "type": "nominal", "title": null},
         "tooltip": [{"field": "fault"}, {"field": "phase"},
                     {"field": "start_s", "format": ".3f"}, {"field": "end_s", "format": ".3f"},
                     {"field": "lost_steps", "title": "steps redone"}]}},
      {"mark": {"type": "rule", "strokeDash": [4, 3]},
       "encoding": {"x": {"datum": 0, "type": "quantitative"}}}]})vl",
                     segments);
    // The run's end as a second rule, from the JSON.
    spec["layer"][1]["encoding"]["x"]["datum"] = measured.at("wall_time_s");
    page.plots.push_back(
        {"Faults on the wall clock",
         "When each fault struck, how long its mechanism took to notice it, and how long the "
         "restart took (a new process, rendezvous, restore). The dashed line is the end of the "
         "run. The bars are short against the run: that is what a seconds-scale detection "
         "looks like at this time scale.",
         spec});
  }
  return page;
}

}  // namespace trainsim::cli::report
