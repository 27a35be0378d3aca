// cli/report/html_report.h — `--html FILE`: one self-contained HTML page per command, with
// Vega-Lite plots (docs/report.md).
//
// Contract: the page embeds the command's --json document unchanged under "report" (so every
// number in it equals the JSON's by construction), anything the plots need beyond it under
// "extra", one Vega-Lite spec per plot, and the minified vega, vega-lite and vega-embed bundles
// read at write time from the web directory (scripts/setup-web.sh installs them; nothing is
// fetched when the page opens). Key figures are filled in by the page from the embedded report
// through JSON pointers: each is an element id="fig-<id>" with data-value = the number as
// JavaScript prints it. When every plot has rendered the <body> gets data-rendered="<count>";
// any script error is shown on the page and counted in data-errors. Same input, same bytes.
#ifndef TRAINSIM_CLI_REPORT_HTML_REPORT_H_
#define TRAINSIM_CLI_REPORT_HTML_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/status.h"

namespace trainsim::cli::report {

// The three minified bundles, read from the web directory: $TRAINSIM_WEB_DIR when set, else
// the node_modules directory configured at build time (TRAINSIM_DEFAULT_WEB_DIR). NotFound
// (exit 2) naming the directory, the missing file and scripts/setup-web.sh when one is absent.
struct WebLibraries {
  std::string dir;
  std::string vega, vega_lite, vega_embed;
};
Result<WebLibraries> LoadWebLibraries();

struct HtmlFigure {
  std::string id;       // element id "fig-<id>"
  std::string label;    // shown beside the value
  std::string pointer;  // JSON pointer into {"report": ..., "extra": ...}, e.g. "/report/step/mfu"
  std::string format;   // "pct", "duration", "usd", "bytes" (GB = 1e9),
                        // "size" (B/KiB/MiB/GiB), "gbps", "int" or "num"
};

struct HtmlPlot {
  std::string title;
  std::string caption;  // one or two sentences: what the plot shows and how to read it
  nlohmann::json spec;  // a Vega-Lite spec with its data inline
};

struct HtmlPage {
  std::string title;     // "trainsim run — <layout>"
  std::string subtitle;  // the scenario, the command line's gist
  nlohmann::json report;
  nlohmann::json extra = nlohmann::json::object();
  std::vector<HtmlFigure> figures;
  std::vector<HtmlPlot> plots;
  std::vector<std::string> notes;  // shown under the figures (what was left out and why)
};

// "/a~b/c" → "/a~0b~1c": one JSON pointer token per key (RFC 6901).
std::string PointerToken(const std::string& key);

std::string RenderHtml(const HtmlPage& page, const WebLibraries& libraries);
// RenderHtml written through a temporary file renamed into place (sim/atomic_file.h).
Status WriteHtml(const std::string& path, const HtmlPage& page, const WebLibraries& libraries);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_HTML_REPORT_H_
