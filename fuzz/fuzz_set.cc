// Fuzzes `--set PATH=VALUE` on the bundled demo scenario: ApplyOverride, then defaults,
// validation and Resolve. Properties: never crashes; an error names the assignment or field; an
// override that applies and validates also resolves. Up to three assignments per input, one per
// line, so paths into repeated fields (faults.N.at) and enum/number interplay get exercised.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "scenarios/scenario.h"

namespace {

// A compact scenario with every section the overrides can reach (faults included).
constexpr std::string_view kBase = R"pb(
  name: "fuzz"
  cluster { gpu: "H100-SXM-80GB" nodes: 2 }
  model { layers: 8 hidden: 1024 heads: 16 seq_len: 2048 }
  parallelism { tp: 4 pp: 2 dp: 2 micro_batch: 1 global_batch: 16 }
  training { steps: 1000 }
  checkpoint { policy: ASYNC interval: "1h" }
  failures { enabled: true }
  faults { kind: GPU id: 3 at: "2h" }
)pb";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  while (!input.empty() && sets.size() < 3) {
    size_t nl = input.find('\n');
    sets.emplace_back(input.substr(0, nl));
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  }
  auto loaded = trainsim::scenarios::ParseScenarioText(kBase, "fuzz.textproto", sets);
  if (!loaded.ok()) {
    FUZZ_CHECK(!loaded.status().message().empty(), std::string(data, data + size));
    return 0;
  }
  auto resolved = trainsim::scenarios::Resolve(*loaded);
  FUZZ_CHECK(resolved.ok(), resolved.status().message());
  return 0;
}
