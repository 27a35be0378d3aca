// The built-in hardware catalogue: GPUs, NICs and node types with datasheet numbers.
//
// The data lives in scenarios/catalogue/*.textproto (each number with its source in a comment)
// and is compiled into the library as string literals at build time, so the binary works from
// any directory. The catalogue is parsed once, on first use, and is immutable afterwards; the
// references and pointers returned here stay valid for the life of the program.
//
// Lookups accept the catalogue name or any alias, case-insensitively ("h100-sxm-80gb", "H100").
#ifndef TRAINSIM_SCENARIOS_CATALOGUE_H_
#define TRAINSIM_SCENARIOS_CATALOGUE_H_

#include <string>
#include <string_view>

#include "scenarios/scenario.pb.h"
#include "sim/status.h"

namespace trainsim::scenarios {

// The embedded catalogue. Aborts with a message if the embedded data does not parse (a build
// defect, covered by tests), never on user input.
const pb::Catalogue& BuiltinCatalogue();

// nullptr when no entry has this name or alias.
const pb::GpuSpec* FindGpu(std::string_view name);
const pb::NicSpec* FindNic(std::string_view name);
const pb::NodeSpec* FindNode(std::string_view name);

// Like Find*, but a NotFound Status that names the closest entry and lists the valid names:
// `unknown GPU "H100-SXM"; did you mean "H100-SXM-80GB"? (known: A100-SXM-80GB, ...)`.
Result<pb::GpuSpec> LookupGpu(std::string_view name);
Result<pb::NicSpec> LookupNic(std::string_view name);
Result<pb::NodeSpec> LookupNode(std::string_view name);

// Dense tensor-core peak of `gpu` at `precision`, TFLOP/s (0 when the GPU lacks it).
double PeakTflops(const pb::GpuSpec& gpu, pb::Precision precision);

// The GPU's copy bandwidth to host memory (`to_host`) or from it, GB/s per direction: over its
// host link where the host memory has one (Grace's NVLink-C2C), else over PCIe, times the
// fraction of the link that copies reach in that direction (host_link_d2h_efficiency,
// host_link_h2d_efficiency; 0 = all of it). 0 when the GPU lists neither link.
double HostCopyGBps(const pb::GpuSpec& gpu, bool to_host);

}  // namespace trainsim::scenarios

#endif  // TRAINSIM_SCENARIOS_CATALOGUE_H_
