// Fuzzes the calibration reader (comm::ParseCalibration, what LoadCalibration runs on a file's
// bytes). Properties: never crashes or throws; an error has a message that names the file; a
// calibration it accepts answers every lookup without crashing, with a positive finite time and
// rate, or nullopt, and Describe() is one line.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "comm/calibration.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = trainsim::comm::ParseCalibration(text, "fuzz.json");
  if (!c.ok()) {
    FUZZ_CHECK(c.status().message().rfind("fuzz.json", 0) == 0, c.status().message());
    return 0;
  }
  FUZZ_CHECK(c->Describe().find('\n') == std::string::npos, c->Describe());
  // Every measured point, and sizes between and beyond them.
  for (const trainsim::comm::CollectiveSample& s : c->collectives()) {
    for (int64_t bytes : {s.size_bytes, s.size_bytes + 1, s.size_bytes / 2 + 1, int64_t{1} << 62}) {
      auto t = c->CollectiveTime(s.op, s.algo, s.nranks, bytes, s.nodes);
      if (t) FUZZ_CHECK(*t > trainsim::sim::Time(), s.op + " " + s.algo);
    }
    (void)c->HasCollective(s.op, s.algo, s.nranks, s.nodes);
  }
  for (const trainsim::comm::GemmSample& g : c->gemms()) {
    auto tflops = c->GemmTflops(g.dtype, g.m, g.n, g.k, g.batch);
    FUZZ_CHECK(tflops.has_value(), g.dtype);  // its own row matches exactly
    FUZZ_CHECK(std::isfinite(*tflops) && *tflops > 0, g.dtype);
    auto eff = c->GemmEfficiency(g.dtype, g.m * 2, g.n, g.k + 1, g.batch, 989.4);
    if (eff) FUZZ_CHECK(std::isfinite(*eff) && *eff > 0, g.dtype);
  }
  (void)c->CheckGpu("H100-SXM-80GB");
  return 0;
}
