// Fuzzes the human-duration parser and the two parsers built on it (checkpoint.interval and
// --fail/--slow specs). Properties: never crashes; a parsed duration is not negative; it
// round-trips exactly through FormatDuration (sim/time.h promises this for whole nanoseconds).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "scenarios/scenario.h"
#include "sim/time.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = trainsim::sim::ParseDuration(text);
  if (t.ok()) {
    FUZZ_CHECK(t->nanos() >= 0, std::string(text));
    const std::string formatted = trainsim::sim::FormatDuration(*t);
    auto back = trainsim::sim::ParseDuration(formatted);
    FUZZ_CHECK(back.ok(), std::string(text) + " -> " + formatted + ": " + back.status().message());
    FUZZ_CHECK(back->nanos() == t->nanos(), std::string(text) + " -> " + formatted);
  } else {
    FUZZ_CHECK(!t.status().message().empty(), std::string(text));
  }
  (void)trainsim::checkpoint::ParseCheckpointInterval(text);
  (void)trainsim::scenarios::ParseFaultSpec(text);
  return 0;
}
