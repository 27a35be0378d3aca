// Fuzzes the scenario loader on protobuf text format: parse, override-free defaults, validation
// and Resolve. Properties: never crashes; every error has a message that starts with the name
// given for errors (so users see where); a scenario that loads also resolves.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "scenarios/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A leading comment keeps the text-format path even when the input starts with '{'.
  std::string text = "# fuzz\n";
  text.append(reinterpret_cast<const char*>(data), size);
  auto loaded = trainsim::scenarios::ParseScenarioText(text, "fuzz.textproto");
  if (!loaded.ok()) {
    const std::string& msg = loaded.status().message();
    FUZZ_CHECK(!msg.empty(), msg);
    return 0;
  }
  auto resolved = trainsim::scenarios::Resolve(*loaded);
  FUZZ_CHECK(resolved.ok(), resolved.status().message());
  // Context parallelism is a factor of the GPU count like the others (a CP group of cp GPUs
  // holds one sequence's shards).
  FUZZ_CHECK(resolved->num_gpus == resolved->tp * resolved->cp * resolved->pp * resolved->dp,
             std::to_string(resolved->num_gpus));
  return 0;
}
