// Fuzzes the scenario loader on JSON (the proto3 JSON mapping, with the loader's own
// line:column and unknown-field handling). Properties as for fuzz_scenario_text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "scenarios/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The loader picks JSON when the text starts with '{' after whitespace; make it so.
  std::string text(reinterpret_cast<const char*>(data), size);
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') text.insert(0, "{");
  auto loaded = trainsim::scenarios::ParseScenarioText(text, "fuzz.json");
  if (!loaded.ok()) {
    const std::string& msg = loaded.status().message();
    FUZZ_CHECK(!msg.empty(), msg);
    return 0;
  }
  auto resolved = trainsim::scenarios::Resolve(*loaded);
  FUZZ_CHECK(resolved.ok(), resolved.status().message());
  return 0;
}
