// The HTML pages of whatif, sweep, collective, validate and diagnose (html_pages.h); run's is in
// html_pages.cc.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cli/report/html_pages.h"
#include "cli/report/html_spec.h"

namespace trainsim::cli::report {
namespace {

using nlohmann::json;

constexpr double kHour = 3600;  // seconds
constexpr double kDay = 86400;  // seconds

// The empirical CDF of `samples` (value, share of trials at or below it) with the JSON's p50,
// p90 and p99 of the same samples as rules.
json CdfSpec(std::vector<double> samples, double scale, const char* x_title, const json& stat) {
  std::sort(samples.begin(), samples.end());
  json values = json::array();
  for (size_t i = 0; i < samples.size(); ++i) {
    values.push_back({{"x", samples[i] / scale},
                      {"p", static_cast<double>(i + 1) / static_cast<double>(samples.size())}});
  }
  json spec = Spec(R"vl({"width": 760, "height": 260,
    "layer": [
      {"mark": {"type": "line", "interpolate": "step-after"},
       "encoding": {"x": {"field": "x", "type": "quantitative"},
                    "y": {"field": "p", "type": "quantitative",
                          "title": "share of failure histories", "axis": {"format": "%"}},
                    "tooltip": [{"field": "x", "format": ".4~f"},
                                {"field": "p", "format": ".0%"}]}},
      {"mark": {"type": "rule", "strokeDash": [4, 3]},
       "encoding": {"x": {"field": "x", "type": "quantitative"},
                    "color": {"field": "stat", "type": "nominal", "title": "from the JSON",
                              "sort": ["p50", "p90", "p99"]}}}]})vl",
                   values);
  spec["layer"][0]["encoding"]["x"]["title"] = x_title;
  json rules = json::array();
  for (const char* k : {"p50", "p90", "p99"}) {
    rules.push_back({{"stat", k}, {"x", stat[k].get<double>() / scale}});
  }
  spec["layer"][1]["data"] = {{"values", rules}};
  return spec;
}

json BreakdownDeltaSpec(const json& doc) {
  json values = json::array();
  for (const auto& [part, v] : doc["whatif"]["breakdown_s"].items()) {
    const double d = v.get<double>() - doc["baseline"]["breakdown_s"][part].get<double>();
    values.push_back({{"part", part}, {"delta_h", d / kHour}});
  }
  return Spec(R"vl({"width": 760, "height": {"step": 22}, "mark": "bar",
    "encoding": {
      "y": {"field": "part", "type": "nominal", "title": null, "sort": null},
      "x": {"field": "delta_h", "type": "quantitative",
            "title": "what-if minus baseline (hours of wall time)"},
      "color": {"condition": {"test": "datum.delta_h < 0", "value": "#2da44e"},
                "value": "#cf222e"},
      "tooltip": [{"field": "part"}, {"field": "delta_h", "format": ".4f"}]}})vl",
              values);
}

}  // namespace

HtmlPage WhatIfHtmlPage(const json& doc, const scenarios::WhatIfOutcome& outcome) {
  HtmlPage page;
  std::string faults;
  for (const json& f : doc["added_faults"]) {
    faults += (faults.empty() ? "" : "; ") + f.value("fault", std::string());
  }
  page.title = "trainsim whatif — " + faults;
  page.subtitle = "The run with and without the added faults, on failure history " +
                  std::to_string(doc.value("trial", 0)) + ".";
  page.report = doc;
  page.figures = {Fig("delta_wall_time_s", "extra wall time", "/delta/wall_time_s", "duration"),
                  Fig("delta_cost_usd", "extra cost", "/delta/cost_usd", "usd"),
                  Fig("delta_lost_work_s", "extra lost work", "/delta/lost_work_s", "duration")};
  page.plots.push_back({"Where the extra wall time goes",
                        "Each part of the wall time in the what-if run minus the baseline's.",
                        BreakdownDeltaSpec(doc)});
  if (doc.contains("trials")) {
    const json& t = doc["trials"];
    page.figures.push_back(Fig("trials", "failure histories", "/trials/n", "int"));
    page.figures.push_back(Fig("delta_wall_time_mean_s", "extra wall time, mean",
                               "/trials/delta_wall_time_s/mean", "duration"));
    page.figures.push_back(Fig("delta_wall_time_p90_s", "extra wall time, p90",
                               "/trials/delta_wall_time_s/p90", "duration"));
    page.figures.push_back(
        Fig("delta_cost_mean_usd", "extra cost, mean", "/trials/delta_cost_usd/mean", "usd"));
    page.extra["trials"] = {{"delta_wall_time_s", outcome.delta_wall_time_samples_s},
                            {"delta_cost_usd", outcome.delta_cost_samples_usd}};
    page.plots.push_back({"Extra wall time over failure histories (CDF)",
                          "For each of the " + std::to_string(t.value("n", 0)) +
                              " failure histories, the what-if run's wall time minus the "
                              "baseline's; dashed rules at the JSON's p50, p90 and p99.",
                          CdfSpec(outcome.delta_wall_time_samples_s, kHour,
                                  "extra wall time (hours)", t["delta_wall_time_s"])});
    page.plots.push_back(
        {"Extra cost over failure histories (CDF)", "The same comparison in dollars.",
         CdfSpec(outcome.delta_cost_samples_usd, 1, "extra cost (USD)", t["delta_cost_usd"])});
  } else {
    page.notes.push_back(
        "Run with --trials N for the distribution of the delta over N failure histories.");
  }
  return page;
}

HtmlPage SweepHtmlPage(const json& doc, const sweep::SweepResult& result) {
  HtmlPage page;
  page.title = "trainsim sweep";
  page.subtitle = std::to_string(doc.value("evaluated", 0)) + " layouts evaluated, " +
                  std::to_string(doc.value("rejected", 0)) + " rejected; ranked by " +
                  doc.value("objective", std::string()) + ".";
  page.report = doc;
  page.figures = {Fig("evaluated", "layouts evaluated", "/evaluated", "int"),
                  Fig("rejected", "rejected", "/rejected", "int"),
                  Fig("best_time_s", "best: time to train", "/top/0/time_to_train_s", "duration"),
                  Fig("best_cost_usd", "best: cost", "/top/0/cost_usd", "usd"),
                  Fig("best_mfu", "best: MFU", "/top/0/mfu", "pct")};
  std::vector<bool> top(result.evaluations.size()), pareto(result.evaluations.size());
  for (size_t i : result.top) top[i] = true;
  for (size_t i : result.pareto) pareto[i] = true;
  json values = json::array();
  for (size_t i = 0; i < result.evaluations.size(); ++i) {
    const sweep::Evaluation& e = result.evaluations[i];
    if (e.rejected || !e.fits) continue;
    values.push_back({{"time_to_train_s", e.time_to_train_s},
                      {"days", e.time_to_train_s / kDay},
                      {"cost_usd", e.cost_usd},
                      {"gpus", e.layout.gpus},
                      {"mfu", e.mfu},
                      {"layout", sweep::DescribeLayout(e.layout)},
                      {"top", static_cast<bool>(top[i])},
                      {"pareto", static_cast<bool>(pareto[i])}});
  }
  page.extra["evaluated"] = values;
  page.plots.push_back(
      {"Time to train vs cost",
       "Every evaluated layout (colour: GPU count). The red line joins the time-cost Pareto "
       "front (no layout is both faster and cheaper); black rings mark the top layouts.",
       Spec(R"vl({"width": 760, "height": 380,
    "layer": [
      {"mark": {"type": "point", "filled": true, "opacity": 0.45, "size": 28},
       "params": [{"name": "zoom", "select": "interval", "bind": "scales"}],
       "encoding": {
         "x": {"field": "days", "type": "quantitative", "scale": {"type": "log"},
               "title": "time to train (days, failures counted; log scale)"},
         "y": {"field": "cost_usd", "type": "quantitative", "scale": {"type": "log"},
               "title": "cost (USD, log scale)"},
         "color": {"field": "gpus", "type": "nominal", "title": "GPUs"},
         "tooltip": [{"field": "layout"}, {"field": "gpus"},
                     {"field": "days", "format": ".2f"}, {"field": "cost_usd", "format": ",.0f"},
                     {"field": "mfu", "format": ".1%"}]}},
      {"transform": [{"filter": "datum.pareto"}],
       "mark": {"type": "line", "color": "#cf222e", "point": {"color": "#cf222e", "size": 60}},
       "encoding": {"x": {"field": "days", "type": "quantitative"},
                    "y": {"field": "cost_usd", "type": "quantitative"},
                    "order": {"field": "days"}}},
      {"transform": [{"filter": "datum.top"}],
       "mark": {"type": "point", "color": "#000", "size": 120, "strokeWidth": 1.5},
       "encoding": {"x": {"field": "days", "type": "quantitative"},
                    "y": {"field": "cost_usd", "type": "quantitative"},
                    "tooltip": [{"field": "layout"}, {"field": "days", "format": ".2f"},
                                {"field": "cost_usd", "format": ",.0f"}]}}]})vl",
            values)});
  return page;
}

HtmlPage CollectiveHtmlPage(const json& doc, const json& per_algorithm) {
  HtmlPage page;
  const json& first = doc.at(0);
  page.title = "trainsim collective — " + first.value("op", std::string()) + " over " +
               std::to_string(first.value("group", 0)) + " GPUs";
  page.subtitle = "Bus bandwidth by message size (nccl-tests' busbw convention).";
  page.report = doc;
  const std::string last = "/" + std::to_string(doc.size() - 1);
  page.figures = {Fig("group", "GPUs in the group", "/0/group", "int"),
                  Fig("largest_bytes", "largest message", last + "/size_bytes", "size"),
                  Fig("largest_busbw", "busbw at the largest", last + "/busbw_GBps", "gbps"),
                  Fig("largest_time_s", "time at the largest", last + "/time_s", "duration")};
  json values = json::array();
  for (const json& r : doc) {
    values.push_back({{"series", "this run"},
                      {"size_bytes", r["size_bytes"]},
                      {"busbw_GBps", r["busbw_GBps"]},
                      {"algo", r["algo"]},
                      {"protocol", r["protocol"]}});
  }
  for (const json& r : per_algorithm) {
    values.push_back({{"series", r["algo"]},
                      {"size_bytes", r["size_bytes"]},
                      {"busbw_GBps", r["busbw_GBps"]},
                      {"algo", r["algo"]},
                      {"protocol", r["protocol"]}});
  }
  page.extra["per_algorithm"] = per_algorithm;
  page.plots.push_back(
      {"Bus bandwidth vs message size, per algorithm",
       "The command's rows (thick, the algorithm it ran or NCCL's tuner would pick) and every "
       "algorithm of the operation timed on the same group.",
       Spec(R"vl({"width": 760, "height": 360,
    "mark": {"type": "line", "point": {"size": 18}},
    "encoding": {
      "x": {"field": "size_bytes", "type": "quantitative", "scale": {"type": "log", "base": 2},
            "title": "message size",
            "axis": {"labelExpr": "datum.value >= 1073741824 ? datum.value / 1073741824 + ' GiB' : datum.value >= 1048576 ? datum.value / 1048576 + ' MiB' : datum.value >= 1024 ? datum.value / 1024 + ' KiB' : datum.value + ' B'"}},
      "y": {"field": "busbw_GBps", "type": "quantitative", "title": "bus bandwidth (GB/s)"},
      "color": {"field": "series", "type": "nominal", "title": "algorithm"},
      "strokeWidth": {"condition": {"test": "datum.series === 'this run'", "value": 4},
                      "value": 1.5},
      "tooltip": [{"field": "series"}, {"field": "algo"}, {"field": "protocol"},
                  {"field": "size_bytes", "format": ","},
                  {"field": "busbw_GBps", "format": ".2f"}]}})vl",
            values)});
  return page;
}

HtmlPage ValidateHtmlPage(const json& doc) {
  HtmlPage page;
  page.title = "trainsim validate";
  page.subtitle = std::to_string(doc["rows"].size()) +
                  " published runs predicted; error = predicted / published − 1.";
  page.report = doc;
  page.figures = {Fig("mape", "MAPE, all rows", "/mape", "pct")};
  int k = 0;
  for (const auto& [source, v] : doc["mape_by_source"].items()) {
    page.figures.push_back(Fig("mape_" + std::to_string(k++), "MAPE, " + source,
                               "/mape_by_source/" + PointerToken(source), "pct"));
  }
  json values = json::array();
  double lo = 0, hi = 0;
  for (const json& r : doc["rows"]) {
    const double p = r["predicted"].get<double>(), q = r["published"].get<double>();
    lo = values.empty() ? std::min(p, q) : std::min({lo, p, q});
    hi = values.empty() ? std::max(p, q) : std::max({hi, p, q});
    values.push_back({{"scenario", r["scenario"]},
                      {"source", r["source"]},
                      {"metric", r["metric"]},
                      {"predicted", p},
                      {"published", q},
                      {"error", r["error"]}});
  }
  json scatter = Spec(R"vl({"width": 560, "height": 460,
    "layer": [
      {"mark": {"type": "line", "color": "#8c959f", "strokeDash": [4, 3]},
       "encoding": {"x": {"field": "v", "type": "quantitative"},
                    "y": {"field": "v", "type": "quantitative"}}},
      {"mark": {"type": "point", "filled": true, "size": 70},
       "encoding": {
         "x": {"field": "published", "type": "quantitative", "scale": {"type": "log"},
               "title": "published (each row's own unit, log scale)"},
         "y": {"field": "predicted", "type": "quantitative", "scale": {"type": "log"},
               "title": "predicted"},
         "color": {"field": "source", "type": "nominal", "title": "source"},
         "shape": {"field": "metric", "type": "nominal", "title": "metric"},
         "tooltip": [{"field": "scenario"}, {"field": "metric"}, {"field": "published"},
                     {"field": "predicted", "format": ".4~f"},
                     {"field": "error", "format": "+.1%"}]}}]})vl",
                      json::array());
  scatter.erase("data");
  scatter["layer"][0]["data"] = {{"values", {{{"v", lo}}, {{"v", hi}}}}};
  scatter["layer"][1]["data"] = {{"values", values}};
  page.plots.push_back({"Predicted vs published",
                        "Every validation row; on the dashed diagonal the prediction equals the "
                        "published number.",
                        scatter});
  page.plots.push_back({"Error per row",
                        "Predicted / published − 1 for each row, coloured by source.",
                        Spec(R"vl({"width": 640, "height": {"step": 20}, "mark": "bar",
    "encoding": {
      "y": {"field": "scenario", "type": "nominal", "title": null, "sort": null},
      "x": {"field": "error", "type": "quantitative", "axis": {"format": "+%"},
            "title": "error (predicted / published − 1)"},
      "color": {"field": "source", "type": "nominal", "title": "source"},
      "tooltip": [{"field": "scenario"}, {"field": "metric"},
                  {"field": "published"}, {"field": "predicted", "format": ".4~f"},
                  {"field": "error", "format": "+.1%"}]}})vl",
                             values)});
  return page;
}

HtmlPage DiagnoseHtmlPage(const json& doc) {
  HtmlPage page;
  page.title = "trainsim diagnose";
  page.subtitle = "Why " + doc["scenario"].get<std::string>() +
                  " runs at its MFU: the causes in the order an expert checks them, and the "
                  "changes the simulator predicts would help.";
  page.report = doc;
  page.figures = {Fig("step_time_s", "step time", "/step_time_s", "s"),
                  Fig("mfu", "MFU", "/mfu", "pct")};
  json causes = json::array();
  int order = 0;
  for (const json& c : doc["causes"]) {
    causes.push_back({{"cause", std::to_string(++order) + ". " + c["name"].get<std::string>()},
                      {"share", c["share_of_step"]},
                      {"evidence", c["evidence"]}});
  }
  page.plots.push_back({"Where the step goes, in the order to check",
                        "Each cause's share of the step (checkpoint stalls and failures: of the "
                        "run's wall time); hover for the evidence.",
                        Spec(R"vl({"width": 640, "height": {"step": 24}, "mark": "bar",
    "encoding": {
      "y": {"field": "cause", "type": "nominal", "title": null, "sort": null},
      "x": {"field": "share", "type": "quantitative", "axis": {"format": "%"},
            "title": "share of the step"},
      "tooltip": [{"field": "cause"}, {"field": "share", "format": ".1%"},
                  {"field": "evidence"}]}})vl",
                             causes)});
  if (!doc["proposals"].empty()) {
    json proposals = json::array();
    proposals.push_back({{"change", "today"},
                         {"mfu", doc["mfu"]},
                         {"step_s", doc["step_time_s"]},
                         {"kind", "today"}});
    for (const json& p : doc["proposals"]) {
      proposals.push_back({{"change", p["change"]},
                           {"mfu", p["predicted_mfu"]},
                           {"step_s", p["predicted_step_s"]},
                           {"kind", "proposed (re-simulated)"}});
    }
    page.plots.push_back({"Predicted MFU of each proposed change",
                          "Each change applied alone, and the helpful ones together, each "
                          "re-simulated by the step model.",
                          Spec(R"vl({"width": 640, "height": {"step": 24}, "mark": "bar",
    "encoding": {
      "y": {"field": "change", "type": "nominal", "title": null, "sort": null},
      "x": {"field": "mfu", "type": "quantitative", "axis": {"format": "%"},
            "title": "MFU"},
      "color": {"field": "kind", "type": "nominal", "title": null},
      "tooltip": [{"field": "change"}, {"field": "mfu", "format": ".1%"},
                  {"field": "step_s", "format": ".3f"}]}})vl",
                               proposals)});
  }
  return page;
}

}  // namespace trainsim::cli::report
