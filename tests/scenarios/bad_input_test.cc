// Every file in tests/scenarios/bad/ must be rejected by LoadScenario with its expected message
// fragment: the first line of a .textproto reads "# expect: FRAGMENT"; a .json file has the
// fragment in FILE.json.expect (JSON has no comments).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace trainsim::scenarios {
namespace {

namespace fs = std::filesystem;

const fs::path kBadDir = fs::path(TRAINSIM_SOURCE_DIR) / "tests/scenarios/bad";

std::vector<std::string> BadFiles() {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(kBadDir)) {
    std::string ext = entry.path().extension().string();
    if (ext == ".textproto" || ext == ".json") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ExpectedFragment(const std::string& file) {
  fs::path p = kBadDir / file;
  std::ifstream in(p.extension() == ".json" ? fs::path(p.string() + ".expect") : p);
  std::string line;
  std::getline(in, line);
  const std::string kPrefix = "# expect: ";
  if (line.rfind(kPrefix, 0) == 0) line = line.substr(kPrefix.size());
  return line;
}

TEST(BadInputTest, ThereIsOneFilePerErrorKindAndEnoughOfThem) { EXPECT_GE(BadFiles().size(), 40u); }

class BadScenarioTest : public testing::TestWithParam<std::string> {};

TEST_P(BadScenarioTest, IsRejectedWithItsMessage) {
  const std::string& file = GetParam();
  std::string expected = ExpectedFragment(file);
  ASSERT_FALSE(expected.empty()) << file << " has no expected message";
  // Load through a path relative to the bad/ folder so messages name "FILE:LINE:COL".
  fs::path old = fs::current_path();
  fs::current_path(kBadDir);
  auto result = LoadScenario(file);
  fs::current_path(old);
  ASSERT_FALSE(result.ok()) << file << " was accepted";
  const std::string& msg = result.status().message();
  EXPECT_NE(msg.find(expected), std::string::npos)
      << file << "\n  expected fragment: " << expected << "\n  got: " << msg;
  EXPECT_EQ(msg.rfind(file, 0), 0u) << "the message starts with the file name: " << msg;
}

INSTANTIATE_TEST_SUITE_P(Files, BadScenarioTest, testing::ValuesIn(BadFiles()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace trainsim::scenarios
