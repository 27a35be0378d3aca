// cli/report/html_spec.h — helpers the HTML pages (html_pages.cc, html_pages_tables.cc) share:
// a Vega-Lite spec from its text with inline data, and a key figure pointing into the page's
// {"report": ..., "extra": ...} document. Internal to cli/report.
#ifndef TRAINSIM_CLI_REPORT_HTML_SPEC_H_
#define TRAINSIM_CLI_REPORT_HTML_SPEC_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "cli/report/html_report.h"

namespace trainsim::cli::report {

// A Vega-Lite spec from its text, with `values` as its inline data.
inline nlohmann::json Spec(const char* text, nlohmann::json values) {
  nlohmann::json spec = nlohmann::json::parse(text);
  spec["data"] = {{"values", std::move(values)}};
  return spec;
}

// A key figure whose value is at `pointer` inside the --json document ("/step/mfu").
inline HtmlFigure Fig(std::string id, std::string label, std::string pointer, std::string format) {
  return {std::move(id), std::move(label), "/report" + std::move(pointer), std::move(format)};
}

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_HTML_SPEC_H_
