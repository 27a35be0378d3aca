#include "scenarios/catalogue.h"

#include <gtest/gtest.h>

namespace trainsim::scenarios {
namespace {

TEST(CatalogueTest, EmbeddedDataParsesAndHoldsTheRequiredEntries) {
  const pb::Catalogue& c = BuiltinCatalogue();
  EXPECT_GE(c.gpu_size(), 4);
  for (const char* gpu : {"A100-SXM-80GB", "H100-SXM-80GB", "H200-SXM-141GB", "B200"}) {
    EXPECT_NE(FindGpu(gpu), nullptr) << gpu;
  }
  for (const char* nic : {"HDR-200", "NDR-400"}) EXPECT_NE(FindNic(nic), nullptr) << nic;
  for (const char* node : {"DGX-A100", "DGX-H100", "DGX-H200", "DGX-B200"}) {
    const pb::NodeSpec* n = FindNode(node);
    ASSERT_NE(n, nullptr) << node;
    EXPECT_EQ(n->gpus_per_node(), 8);
    EXPECT_TRUE(n->nvswitch());
    EXPECT_EQ(n->nics_per_node(), 8);
    EXPECT_NE(FindGpu(n->gpu()), nullptr) << "node " << node << " names an unknown GPU";
    EXPECT_NE(FindNic(n->nic()), nullptr) << "node " << node << " names an unknown NIC";
  }
}

TEST(CatalogueTest, EveryEntryCitesASource) {
  for (const auto& g : BuiltinCatalogue().gpu()) EXPECT_FALSE(g.source().empty()) << g.name();
  for (const auto& n : BuiltinCatalogue().nic()) EXPECT_FALSE(n.source().empty()) << n.name();
  for (const auto& n : BuiltinCatalogue().node()) EXPECT_FALSE(n.source().empty()) << n.name();
}

// Datasheet figures as collected in docs/evidence/references.md ("Hardware facts").
TEST(CatalogueTest, GpuNumbersMatchTheDatasheets) {
  const pb::GpuSpec* a100 = FindGpu("A100-SXM-80GB");
  EXPECT_DOUBLE_EQ(a100->bf16_tflops(), 312);
  EXPECT_DOUBLE_EQ(a100->fp16_tflops(), 312);
  EXPECT_DOUBLE_EQ(a100->fp8_tflops(), 0);  // Ampere has no FP8
  EXPECT_NEAR(a100->hbm_gbyte_per_s(), 2000, 50);
  EXPECT_DOUBLE_EQ(a100->nvlink_gbyte_per_s() * 2, 600);  // 600 GB/s both directions

  const pb::GpuSpec* h100 = FindGpu("H100-SXM-80GB");
  EXPECT_NEAR(h100->bf16_tflops(), 989, 1);
  EXPECT_NEAR(h100->fp8_tflops(), 1979, 1);
  EXPECT_DOUBLE_EQ(h100->hbm_gbyte_per_s(), 3350);
  EXPECT_DOUBLE_EQ(h100->nvlink_gbyte_per_s() * 2, 900);

  const pb::GpuSpec* h200 = FindGpu("H200-SXM-141GB");
  EXPECT_DOUBLE_EQ(h200->bf16_tflops(), h100->bf16_tflops());  // H100's compute
  EXPECT_DOUBLE_EQ(h200->hbm_gbyte_per_s(), 4800);
  EXPECT_GT(h200->hbm_bytes(), 140e9);

  const pb::GpuSpec* b200 = FindGpu("B200");
  EXPECT_DOUBLE_EQ(b200->bf16_tflops(), 2250);
  EXPECT_DOUBLE_EQ(b200->hbm_gbyte_per_s(), 8000);
  EXPECT_DOUBLE_EQ(b200->nvlink_gbyte_per_s() * 2, 1800);

  for (const auto& g : BuiltinCatalogue().gpu()) {
    EXPECT_GE(g.fp16_tflops(), g.tf32_tflops()) << g.name();
    EXPECT_GT(g.hbm_bytes(), 0u) << g.name();
    EXPECT_GT(g.pcie_gbyte_per_s(), 0) << g.name();
  }
}

TEST(CatalogueTest, NicNumbersMatchTheDatasheets) {
  EXPECT_DOUBLE_EQ(FindNic("HDR-200")->gbit_per_s(), 200);
  EXPECT_DOUBLE_EQ(FindNic("NDR-400")->gbit_per_s(), 400);
  EXPECT_EQ(FindNic("HDR-200")->switch_radix(), 40);  // Quantum QM8700
  EXPECT_EQ(FindNic("NDR-400")->switch_radix(), 64);  // Quantum-2 QM9700
}

TEST(CatalogueTest, LookupAcceptsAliasesInAnyCase) {
  EXPECT_EQ(FindGpu("h100")->name(), "H100-SXM-80GB");
  EXPECT_EQ(FindGpu("a100-sxm4-80gb")->name(), "A100-SXM-80GB");
  EXPECT_EQ(FindNic("ndr")->name(), "NDR-400");
  EXPECT_EQ(FindGpu("H100-PCIe"), nullptr);
}

TEST(CatalogueTest, UnknownNamesSuggestTheClosestAndListTheCatalogue) {
  auto r = LookupGpu("H100-SXM-80G");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find("did you mean \"H100-SXM-80GB\"?"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("A100-SXM-80GB, H100-SXM-80GB, H200-SXM-141GB, B200"),
            std::string::npos);
  auto far = LookupNic("Ethernet-100G-something-else");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().message().find("did you mean"), std::string::npos)
      << "no suggestion for a name that resembles nothing: " << far.status().message();
}

TEST(CatalogueTest, PeakTflopsFollowsPrecision) {
  const pb::GpuSpec& h100 = *FindGpu("H100-SXM-80GB");
  EXPECT_DOUBLE_EQ(PeakTflops(h100, pb::BF16), h100.bf16_tflops());
  EXPECT_DOUBLE_EQ(PeakTflops(h100, pb::FP8), h100.fp8_tflops());
  EXPECT_DOUBLE_EQ(PeakTflops(h100, pb::TF32), h100.tf32_tflops());
  EXPECT_DOUBLE_EQ(PeakTflops(*FindGpu("A100-SXM-80GB"), pb::FP8), 0);
}

}  // namespace
}  // namespace trainsim::scenarios
