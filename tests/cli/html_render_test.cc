// cli/report/html_report: the page embeds the report and the libraries so that nothing in them
// can end a <script> early, figures point into the embedded document, a missing library
// directory is NotFound naming setup-web.sh, and the same page renders to the same bytes.
// Everything runs in-process on made-up documents and stand-in "libraries".
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/report/html_report.h"

namespace trainsim::cli::report {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

WebLibraries StandIns() {
  WebLibraries libs;
  libs.vega = "var vega = {s: '</script>'};\n//# sourceMappingURL=vega.min.js.map";
  libs.vega_lite = "var vegaLite = {};";
  libs.vega_embed = "var vegaEmbed = function () {};";
  return libs;
}

HtmlPage Page() {
  HtmlPage page;
  page.title = "t <b>";
  page.report = {{"name", "</script><script>alert(1)</script>"}, {"a/b", 1.5}};
  page.figures = {{"x", "x", "/report/" + PointerToken("a/b"), "num"}};
  page.plots = {{"p", "c", {{"mark", "bar"}}}, {"q", "d", {{"mark", "line"}}}};
  return page;
}

TEST(HtmlReport, NothingInTheDataOrLibrariesEndsAScriptEarly) {
  const std::string html = RenderHtml(Page(), StandIns());
  // The page's own scripts: three libraries, the data, the specs and the driver.
  EXPECT_EQ(Count(html, "<script"), 6u);
  EXPECT_EQ(Count(html, "</script>"), 6u);
  EXPECT_NE(html.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("'<\\/script>'"), std::string::npos);
  EXPECT_EQ(html.find("sourceMappingURL"), std::string::npos);
  EXPECT_NE(html.find("<title>t &lt;b&gt;</title>"), std::string::npos);
}

TEST(HtmlReport, FiguresAndPlotsAreAddressedByIdAndPointer) {
  const std::string html = RenderHtml(Page(), StandIns());
  EXPECT_NE(html.find("id=\"fig-x\" data-pointer=\"/report/a~1b\""), std::string::npos);
  EXPECT_NE(html.find("id=\"plot-0\""), std::string::npos);
  EXPECT_NE(html.find("id=\"plot-1\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"plot-2\""), std::string::npos);
}

TEST(HtmlReport, TheSamePageRendersToTheSameBytes) {
  EXPECT_EQ(RenderHtml(Page(), StandIns()), RenderHtml(Page(), StandIns()));
}

TEST(HtmlReport, PointerTokensEscapeTildeThenSlash) {
  EXPECT_EQ(PointerToken("a~/b"), "a~0~1b");  // RFC 6901, section 3
}

TEST(HtmlReport, AMissingLibraryDirectoryIsNotFoundNamingTheSetUpScript) {
  ASSERT_EQ(setenv("TRAINSIM_WEB_DIR", "/nonexistent/trainsim-web", 1), 0);
  Result<WebLibraries> libs = LoadWebLibraries();
  unsetenv("TRAINSIM_WEB_DIR");
  ASSERT_FALSE(libs.ok());
  EXPECT_EQ(libs.status().code(), Status::Code::kNotFound);
  EXPECT_NE(libs.status().message().find("setup-web.sh"), std::string::npos);
  EXPECT_NE(libs.status().message().find("/nonexistent/trainsim-web"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::cli::report
