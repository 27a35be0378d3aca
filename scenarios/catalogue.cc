#include "scenarios/catalogue.h"

#include <cstdio>
#include <cstdlib>

#include "scenarios/internal.h"

namespace trainsim::scenarios {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

template <typename Spec>
const Spec* FindIn(const google::protobuf::RepeatedPtrField<Spec>& specs, std::string_view name) {
  for (const Spec& spec : specs) {
    if (EqualsIgnoreCase(spec.name(), name)) return &spec;
    for (const std::string& alias : spec.aliases()) {
      if (EqualsIgnoreCase(alias, name)) return &spec;
    }
  }
  return nullptr;
}

template <typename Spec>
Result<Spec> LookupIn(const google::protobuf::RepeatedPtrField<Spec>& specs, std::string_view name,
                      const char* what) {
  if (const Spec* spec = FindIn(specs, name)) return *spec;
  std::vector<std::string> names;
  std::vector<std::string> all_names;  // names and aliases, for the suggestion
  for (const Spec& spec : specs) {
    names.push_back(spec.name());
    all_names.push_back(spec.name());
    for (const std::string& alias : spec.aliases()) all_names.push_back(alias);
  }
  std::string msg = std::string("unknown ") + what + " \"" + std::string(name) + "\"";
  std::string closest = detail::ClosestName(name, all_names);
  if (!closest.empty()) {
    const Spec* spec = FindIn(specs, closest);
    msg += "; did you mean \"" + spec->name() + "\"?";
  }
  msg += " (catalogue: " + detail::JoinNames(names) + ")";
  return Status::NotFound(msg);
}

pb::Catalogue ParseCatalogue() {
  pb::Catalogue catalogue;
  for (const auto& [file, text] : detail::EmbeddedCatalogueFiles()) {
    pb::Catalogue part;
    Status st = detail::ParseMessage(text, "scenarios/catalogue/" + std::string(file),
                                     /*json=*/false, &part);
    if (!st.ok()) {
      // The embedded data is part of the build, not user input: a parse failure is a defect
      // that tests/scenarios/catalogue_test.cc catches before release.
      std::fprintf(stderr, "trainsim: internal error in the built-in catalogue: %s\n",
                   st.message().c_str());
      std::abort();
    }
    catalogue.MergeFrom(part);
  }
  return catalogue;
}

}  // namespace

const pb::Catalogue& BuiltinCatalogue() {
  static const pb::Catalogue* const kCatalogue = new pb::Catalogue(ParseCatalogue());
  return *kCatalogue;
}

const pb::GpuSpec* FindGpu(std::string_view name) { return FindIn(BuiltinCatalogue().gpu(), name); }
const pb::NicSpec* FindNic(std::string_view name) { return FindIn(BuiltinCatalogue().nic(), name); }
const pb::NodeSpec* FindNode(std::string_view name) {
  return FindIn(BuiltinCatalogue().node(), name);
}

Result<pb::GpuSpec> LookupGpu(std::string_view name) {
  return LookupIn(BuiltinCatalogue().gpu(), name, "GPU");
}
Result<pb::NicSpec> LookupNic(std::string_view name) {
  return LookupIn(BuiltinCatalogue().nic(), name, "NIC");
}
Result<pb::NodeSpec> LookupNode(std::string_view name) {
  return LookupIn(BuiltinCatalogue().node(), name, "node type");
}

double PeakTflops(const pb::GpuSpec& gpu, pb::Precision precision) {
  switch (precision) {
    case pb::BF16:
      return gpu.bf16_tflops();
    case pb::FP16:
      return gpu.fp16_tflops();
    case pb::FP8:
      return gpu.fp8_tflops();
    case pb::TF32:
      return gpu.tf32_tflops();
    case pb::FP4:
      return gpu.fp4_tflops();
    default:
      return 0;
  }
}

double HostCopyGBps(const pb::GpuSpec& gpu, bool to_host) {
  const double link =
      gpu.host_link_gbyte_per_s() > 0 ? gpu.host_link_gbyte_per_s() : gpu.pcie_gbyte_per_s();
  if (!(link > 0)) return 0;
  const double eff = to_host ? gpu.host_link_d2h_efficiency() : gpu.host_link_h2d_efficiency();
  return link * (eff > 0 ? eff : 1.0);
}

}  // namespace trainsim::scenarios
