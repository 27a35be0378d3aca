#include "cli/report/html_report.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/atomic_file.h"

#ifndef TRAINSIM_DEFAULT_WEB_DIR
#define TRAINSIM_DEFAULT_WEB_DIR ""
#endif

namespace trainsim::cli::report {
namespace {

// The page's stylesheet: system fonts only (the page opens offline), one column of figures and
// plots.
constexpr const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;
max-width:1100px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 4px}
.sub{color:#57606a;margin:0 0 16px}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:8px}
.fig{border:1px solid #d0d7de;border-radius:6px;padding:8px 10px}
.fig .label{font-size:12px;color:#57606a}.fig .value{font-size:19px;font-weight:600}
.caption{color:#57606a;font-size:13px;margin:0 0 8px;max-width:900px}
.note{color:#57606a;font-size:13px}
#errors{background:#ffebe9;border:1px solid #ff8182;padding:8px;white-space:pre-wrap}
footer{margin-top:32px;color:#8c959f;font-size:12px}
)";

// The page's script: figures from the embedded report, then every plot through vega-embed's
// SVG renderer; errors are shown and counted rather than leaving a silently blank plot.
constexpr const char* kScript = R"(
(function () {
  var errors = [];
  function fail(e) {
    var msg = (e && e.message) ? e.message : String(e);
    errors.push(msg);
    var box = document.getElementById('errors');
    box.textContent = 'Errors while drawing this report:\n' + errors.join('\n');
    box.hidden = false;
    document.body.setAttribute('data-errors', String(errors.length));
  }
  window.addEventListener('error', function (e) { fail(e.error || e.message); });
  window.addEventListener('unhandledrejection', function (e) { fail(e.reason); });
  function lookup(doc, pointer) {
    return pointer.split('/').slice(1).reduce(function (o, t) {
      return o == null ? undefined : o[t.replace(/~1/g, '/').replace(/~0/g, '~')];
    }, doc);
  }
  function duration(s) {
    var a = Math.abs(s), sign = s < 0 ? '-' : '';
    if (a >= 86400) return sign + (a / 86400).toFixed(2) + ' d';
    if (a >= 3600) return sign + (a / 3600).toFixed(2) + ' h';
    if (a >= 60) return sign + (a / 60).toFixed(1) + ' min';
    if (a >= 1) return sign + a.toFixed(3) + ' s';
    return sign + (a * 1e3).toFixed(2) + ' ms';
  }
  function format(v, f) {
    if (typeof v !== 'number') return String(v);
    switch (f) {
      case 'pct': return (100 * v).toFixed(2) + '%';
      case 'duration': return duration(v);
      case 'usd': return '$' + Math.round(v).toLocaleString('en-US');
      case 'bytes': return (v / 1e9).toFixed(1) + ' GB';
      case 'size': return v >= 1073741824 ? v / 1073741824 + ' GiB' : v >= 1048576 ?
          v / 1048576 + ' MiB' : v >= 1024 ? v / 1024 + ' KiB' : v + ' B';
      case 'gbps': return v.toFixed(1) + ' GB/s';
      case 'int': return Math.round(v).toLocaleString('en-US');
      default: return v.toPrecision(4);
    }
  }
  try {
    var data = JSON.parse(document.getElementById('trainsim-data').textContent);
    var specs = JSON.parse(document.getElementById('trainsim-specs').textContent);
    document.querySelectorAll('[data-pointer]').forEach(function (el) {
      var v = lookup(data, el.getAttribute('data-pointer'));
      if (v === undefined) throw new Error('no value at ' + el.getAttribute('data-pointer'));
      el.setAttribute('data-value', String(v));
      el.textContent = format(v, el.getAttribute('data-format'));
    });
    Promise.all(specs.map(function (spec, i) {
      return vegaEmbed('#plot-' + i, spec, {renderer: 'svg', actions: false});
    })).then(function (results) {
      document.body.setAttribute('data-rendered', String(results.length));
    }, fail);
  } catch (e) {
    fail(e);
  }
})();
)";

std::string EscapeHtml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON inside <script>: "<" only occurs inside strings, where \u003c means the same, so no
// "</script>" or "<!--" can end the element early.
std::string ScriptJson(const nlohmann::json& j) {
  std::string s = j.dump();
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// A bundle inside <script>: drop the source-map comment (the map is not embedded) and write
// "</script" as "<\/script", the same text in a JavaScript string or regular expression.
std::string ScriptJs(std::string js) {
  const size_t map = js.rfind("//# sourceMappingURL=");
  if (map != std::string::npos) js.erase(map);
  std::string out;
  out.reserve(js.size());
  for (size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<' && js.compare(i + 1, 7, "/script") == 0) {
      out += "<\\";
    } else {
      out += js[i];
    }
  }
  return out;
}

Result<std::string> ReadBundle(const std::filesystem::path& dir, const std::string& name) {
  const std::filesystem::path file = dir / name / "build" / (name + ".min.js");
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty()) {
    return Status::NotFound("--html: " + file.string() +
                            " is missing or empty; install the plotting libraries with "
                            "scripts/setup-web.sh (npm), or point TRAINSIM_WEB_DIR at the "
                            "node_modules directory that holds vega, vega-lite and vega-embed");
  }
  return text.str();
}

}  // namespace

Result<WebLibraries> LoadWebLibraries() {
  WebLibraries libs;
  const char* env = std::getenv("TRAINSIM_WEB_DIR");
  libs.dir = (env != nullptr && *env != '\0') ? env : TRAINSIM_DEFAULT_WEB_DIR;
  if (libs.dir.empty() || !std::filesystem::is_directory(libs.dir)) {
    return Status::NotFound(
        "--html: the plotting libraries' directory '" + libs.dir +
        "' does not exist (TRAINSIM_WEB_DIR, or the build's default); run scripts/setup-web.sh "
        "(npm) to install vega, vega-lite and vega-embed, or set TRAINSIM_WEB_DIR to their "
        "node_modules directory");
  }
  Result<std::string> vega = ReadBundle(libs.dir, "vega");
  if (!vega.ok()) return vega.status();
  Result<std::string> vega_lite = ReadBundle(libs.dir, "vega-lite");
  if (!vega_lite.ok()) return vega_lite.status();
  Result<std::string> vega_embed = ReadBundle(libs.dir, "vega-embed");
  if (!vega_embed.ok()) return vega_embed.status();
  libs.vega = std::move(*vega);
  libs.vega_lite = std::move(*vega_lite);
  libs.vega_embed = std::move(*vega_embed);
  return libs;
}

std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderHtml(const HtmlPage& page, const WebLibraries& libraries) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"generator\" content=\"trainsim\">\n<title>" << EscapeHtml(page.title)
      << "</title>\n<style>" << kStyle << "</style>\n";
  out << "<script>" << ScriptJs(libraries.vega) << "</script>\n";
  out << "<script>" << ScriptJs(libraries.vega_lite) << "</script>\n";
  out << "<script>" << ScriptJs(libraries.vega_embed) << "</script>\n";
  out << "</head>\n<body>\n<h1>" << EscapeHtml(page.title) << "</h1>\n<p class=\"sub\">"
      << EscapeHtml(page.subtitle) << "</p>\n<pre id=\"errors\" hidden></pre>\n";
  out << "<div class=\"figs\">\n";
  for (const HtmlFigure& f : page.figures) {
    out << "<div class=\"fig\"><div class=\"label\">" << EscapeHtml(f.label)
        << "</div><div class=\"value\" id=\"fig-" << EscapeHtml(f.id) << "\" data-pointer=\""
        << EscapeHtml(f.pointer) << "\" data-format=\"" << EscapeHtml(f.format)
        << "\"></div></div>\n";
  }
  out << "</div>\n";
  for (const std::string& note : page.notes) {
    out << "<p class=\"note\">" << EscapeHtml(note) << "</p>\n";
  }
  nlohmann::json specs = nlohmann::json::array();
  for (size_t i = 0; i < page.plots.size(); ++i) {
    const HtmlPlot& p = page.plots[i];
    out << "<h2>" << EscapeHtml(p.title) << "</h2>\n<p class=\"caption\">" << EscapeHtml(p.caption)
        << "</p>\n<div class=\"plot\" id=\"plot-" << i << "\"></div>\n";
    specs.push_back(p.spec);
  }
  out << "<footer>Written by trainsim. The numbers are the command's --json output, embedded "
         "below; plots drawn with Vega-Lite.</footer>\n";
  out << "<script type=\"application/json\" id=\"trainsim-data\">"
      << ScriptJson({{"report", page.report}, {"extra", page.extra}}) << "</script>\n";
  out << "<script type=\"application/json\" id=\"trainsim-specs\">" << ScriptJson(specs)
      << "</script>\n";
  out << "<script>" << kScript << "</script>\n</body>\n</html>\n";
  return out.str();
}

Status WriteHtml(const std::string& path, const HtmlPage& page, const WebLibraries& libraries) {
  Status st = sim::WriteFileAtomically(path, RenderHtml(page, libraries));
  return st.ok() ? st : st.WithPrefix("--html");
}

}  // namespace trainsim::cli::report
