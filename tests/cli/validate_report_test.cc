// cli/report/validate_report: `trainsim validate` reports one table per source with that
// table's MAPE, and the JSON carries the per-table MAPE. Rows are made up here; the MAPEs are
// the mean of |error| worked by hand.
#include "cli/report/validate_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainsim::cli::report {
namespace {

scenarios::ValidationRow Row(const std::string& name, const std::string& source, double error) {
  scenarios::ValidationRow r;
  r.scenario = name;
  r.source = source;
  r.metric = "tokens_per_sec_per_gpu";
  r.published = 1000;
  r.predicted = 1000 * (1 + error);
  r.error = error;
  r.micro_batch = 1;
  r.step_time_s = 2;
  return r;
}

std::vector<scenarios::ValidationRow> TwoTables() {
  // Interleaved on purpose: the report groups by source, not by position.
  return {Row("a1", "Table A", 0.10), Row("b1", "Table B", 0.02), Row("a2", "Table A", -0.30)};
}

TEST(ValidateReportTest, TableGroupsRowsBySourceWithEachTablesMape) {
  const std::string out = FormatValidationTable(TwoTables());
  const size_t a = out.find("== Table A (2 rows)");
  const size_t b = out.find("== Table B (1 rows)");
  ASSERT_NE(a, std::string::npos) << out;
  ASSERT_NE(b, std::string::npos) << out;
  // Both of A's rows sit under A's header, before B's.
  EXPECT_GT(out.find("a2"), a);
  EXPECT_LT(out.find("a2"), b);
  EXPECT_GT(out.find("b1"), b);
  EXPECT_NE(out.find("MAPE Table A: 20.0%"), std::string::npos) << out;  // (10 + 30) / 2
  EXPECT_NE(out.find("MAPE Table B: 2.0%"), std::string::npos) << out;
  EXPECT_NE(out.find("MAPE overall: 14.0%"), std::string::npos) << out;  // (10 + 2 + 30) / 3
}

TEST(ValidateReportTest, JsonHasPerTableMape) {
  const nlohmann::json j = nlohmann::json::parse(FormatValidationJson(TwoTables()));
  ASSERT_EQ(j["tables"].size(), 2u);
  EXPECT_EQ(j["tables"][0]["source"], "Table A");
  EXPECT_EQ(j["tables"][0]["count"], 2);
  EXPECT_NEAR(j["tables"][0]["mape"].get<double>(), 0.20, 1e-12);
  EXPECT_EQ(j["tables"][0]["rows"][1], "a2");
  EXPECT_NEAR(j["tables"][1]["mape"].get<double>(), 0.02, 1e-12);
  EXPECT_NEAR(j["mape_by_source"]["Table B"].get<double>(), 0.02, 1e-12);
  EXPECT_NEAR(j["mape"].get<double>(), 0.14, 1e-12);
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_TRUE(j["rows"][0].contains("breakdown"));
}

TEST(ValidateReportTest, ModelTflopsShownOnlyWherePublished) {
  std::vector<scenarios::ValidationRow> rows = TwoTables();
  rows[0].model_tflops_published = 700;
  rows[0].model_tflops_predicted = 770;
  const nlohmann::json j = nlohmann::json::parse(FormatValidationJson(rows));
  EXPECT_NEAR(j["rows"][0]["model_tflops_per_gpu"]["error"].get<double>(), 0.10, 1e-12);
  EXPECT_FALSE(j["rows"][1].contains("model_tflops_per_gpu"));
  EXPECT_NE(FormatValidationTable(rows).find("770 vs 700"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::cli::report
