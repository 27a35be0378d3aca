#include "scenarios/catalogue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "scenarios/scenario.h"
#include "scenarios/step_config.h"

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

  // The export variants keep their parent's compute and HBM and cut NVLink to 400 GB/s both
  // directions together (A800 and H800 datasheets).
  for (const auto& [variant, parent] : {std::pair{"A800", "A100"}, std::pair{"H800", "H100"}}) {
    const pb::GpuSpec* v = FindGpu(variant);
    const pb::GpuSpec* p = FindGpu(parent);
    ASSERT_NE(v, nullptr) << variant;
    EXPECT_EQ(v->architecture(), p->architecture()) << variant;
    EXPECT_DOUBLE_EQ(v->bf16_tflops(), p->bf16_tflops()) << variant;
    EXPECT_DOUBLE_EQ(v->fp8_tflops(), p->fp8_tflops()) << variant;
    EXPECT_DOUBLE_EQ(v->hbm_gbyte_per_s(), p->hbm_gbyte_per_s()) << variant;
    EXPECT_DOUBLE_EQ(v->nvlink_gbyte_per_s() * 2, 400) << variant;
  }

  // Measured GEMM ceilings (MAMF) are fractions of the peak; GB200's sits below B200's.
  EXPECT_DOUBLE_EQ(FindGpu("GB200")->gemm_ceiling_16bit(), 0.729);
  EXPECT_LT(FindGpu("GB200")->gemm_ceiling_fp8(), FindGpu("B200")->gemm_ceiling_fp8());
  for (const auto& g : BuiltinCatalogue().gpu()) {
    for (double ceiling : {g.gemm_ceiling_16bit(), g.gemm_ceiling_fp8()}) {
      EXPECT_GE(ceiling, 0) << g.name();
      EXPECT_LT(ceiling, 1) << g.name();
    }
    for (double eff : {g.host_link_d2h_efficiency(), g.host_link_h2d_efficiency()}) {
      EXPECT_GE(eff, 0) << g.name();  // 0: the link's full rate
      EXPECT_LE(eff, 1) << g.name();
    }
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
  EXPECT_NE(
      r.status().message().find("A100-SXM-80GB, A100-SXM-40GB, H100-SXM-80GB, H200-SXM-141GB"),
      std::string::npos)
      << r.status().message();
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

// Blackwell-generation entries (datasheet figures in scenarios/catalogue/*.textproto).
TEST(CatalogueTest, BlackwellGpusNodesAndRacksLoadAndResolve) {
  for (const char* gpu : {"B300", "GB200", "GB300"}) {
    const pb::GpuSpec* g = FindGpu(gpu);
    ASSERT_NE(g, nullptr) << gpu;
    EXPECT_EQ(g->architecture(), "blackwell");
    EXPECT_DOUBLE_EQ(g->nvlink_gbyte_per_s() * 2, 1800) << gpu;  // NVLink 5: 1.8 TB/s
    EXPECT_DOUBLE_EQ(g->hbm_gbyte_per_s(), 8000) << gpu;
  }
  EXPECT_DOUBLE_EQ(FindGpu("B300")->bf16_tflops(), 36000.0 / 8 / 2);     // HGX B300: 36 PF sparse
  EXPECT_DOUBLE_EQ(FindGpu("GB200")->bf16_tflops(), 360000.0 / 72 / 2);  // NVL72: 360 PF sparse
  EXPECT_DOUBLE_EQ(FindGpu("GB300")->fp8_tflops(), 720000.0 / 72 / 2);   // NVL72: 720 PF sparse
  EXPECT_GT(FindGpu("B300")->hbm_bytes(), 288e9);
  for (const char* node : {"DGX-B300", "GB200-NVL72", "GB300-NVL72"}) {
    const pb::NodeSpec* n = FindNode(node);
    ASSERT_NE(n, nullptr) << node;
    EXPECT_TRUE(n->nvswitch());
    EXPECT_NE(FindGpu(n->gpu()), nullptr) << node;
    EXPECT_NE(FindNic(n->nic()), nullptr) << node;
    EXPECT_EQ(n->nics_per_node(), n->gpus_per_node()) << node;  // one compute NIC per GPU
  }
  EXPECT_EQ(FindNode("GB200-NVL72")->gpus_per_node(), 72);         // one 72-GPU NVLink domain
  EXPECT_GT(FindNode("GB300-NVL72")->host_memory_bytes(), 17e12);  // 36 Grace x 480 GB
  EXPECT_EQ(FindNode("DGX-B300")->nic(), "XDR-800");
  EXPECT_DOUBLE_EQ(FindNic("ConnectX-8")->gbit_per_s(), 800);
  EXPECT_EQ(FindNic("XDR-800")->switch_radix(), 144);  // Quantum-X800 Q3400
}

// Grace Hopper: the H100 die at its own (higher) power limit, with HBM3 or HBM3e and Grace's
// memory behind NVLink-C2C (NVIDIA GH200 datasheet; MAMF table of S. Bekman's ml-engineering).
TEST(CatalogueTest, GraceHopperSuperchipsHaveH100PeaksAndTheirOwnMeasuredCeilings) {
  const pb::GpuSpec& h100 = *FindGpu("H100-SXM-80GB");
  for (const char* gpu : {"GH200-96GB", "GH200-144GB"}) {
    const pb::GpuSpec* g = FindGpu(gpu);
    ASSERT_NE(g, nullptr) << gpu;
    EXPECT_EQ(g->architecture(), "hopper");
    EXPECT_DOUBLE_EQ(g->bf16_tflops(), h100.bf16_tflops()) << gpu;
    EXPECT_DOUBLE_EQ(g->fp8_tflops(), h100.fp8_tflops()) << gpu;
    EXPECT_NEAR(g->gemm_ceiling_16bit(), 828.6 / 989, 1e-3) << gpu;  // MAMF 828.6 of 989
    EXPECT_NEAR(g->gemm_ceiling_fp8(), 1535.0 / 1979, 1e-3) << gpu;  // MAMF 1,535.0 of 1,979
    EXPECT_GT(g->gemm_ceiling_16bit(), h100.gemm_ceiling_16bit()) << gpu;
    EXPECT_DOUBLE_EQ(g->host_link_gbyte_per_s(), 900.0 / 2) << gpu;  // all of NVLink-C2C
    // Copies measured over NVLink-C2C (Schieffer et al. 2024): 297 GB/s out, 375 GB/s in.
    EXPECT_NEAR(g->host_link_d2h_efficiency() * g->host_link_gbyte_per_s(), 297, 2) << gpu;
    EXPECT_NEAR(g->host_link_h2d_efficiency() * g->host_link_gbyte_per_s(), 375, 2) << gpu;
  }
  EXPECT_EQ(FindGpu("GH200")->name(), "GH200-96GB");
  EXPECT_DOUBLE_EQ(FindGpu("GH200-96GB")->hbm_bytes(), 96.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(FindGpu("GH200-96GB")->hbm_gbyte_per_s(), 4000);
  EXPECT_DOUBLE_EQ(FindGpu("GH200-144GB")->hbm_gbyte_per_s(), 4900);
  for (const char* node : {"MGX-GH200", "MGX-GH200-144GB"}) {
    const pb::NodeSpec* n = FindNode(node);
    ASSERT_NE(n, nullptr) << node;
    EXPECT_EQ(n->gpus_per_node(), 1) << node;  // one superchip per node
    EXPECT_FALSE(n->nvswitch()) << node;       // no NVLink fabric between nodes' GPUs
    EXPECT_EQ(n->nics_per_node(), 1) << node;
    EXPECT_NE(FindGpu(n->gpu()), nullptr) << node;
    EXPECT_NE(FindNic(n->nic()), nullptr) << node;
  }
}

TEST(CatalogueTest, EthernetNicsSayRoceAndWhetherTheyRouteAdaptively) {
  EXPECT_EQ(FindNic("NDR-400")->fabric(), pb::NicSpec::INFINIBAND);
  EXPECT_EQ(FindNic("RoCE-400")->fabric(), pb::NicSpec::ROCE);
  EXPECT_FALSE(FindNic("RoCE-400")->adaptive_routing());
  EXPECT_TRUE(FindNic("SpectrumX-400")->adaptive_routing());
  EXPECT_DOUBLE_EQ(FindNic("SpectrumX-800")->gbit_per_s(), 800);
  EXPECT_GT(FindNic("RoCE-400")->latency_us(), FindNic("NDR-400")->latency_us());
}

comm::TopologySpec TopologyOf(const std::string& cluster) {
  const std::string text = "cluster { " + cluster +
                           " }\nmodel { layers: 4 hidden: 1024 heads: 8 }\n"
                           "training { steps: 1 }\n";
  auto scenario = ParseScenarioText(text, "test.textproto", {});
  EXPECT_TRUE(scenario.ok()) << scenario.status().message();
  auto resolved = Resolve(*scenario);
  EXPECT_TRUE(resolved.ok()) << resolved.status().message();
  return MakeTopologySpec(*resolved);
}

TEST(CatalogueTopologyTest, NvlsOnHopperAndBlackwellNvswitchNodesOnly) {
  const comm::TopologySpec a100 = TopologyOf("gpu: \"A100\" nodes: 2");
  EXPECT_FALSE(a100.nvls);  // NVSwitch 2: no NVLink SHARP
  const comm::TopologySpec h100 = TopologyOf("gpu: \"H100\" nodes: 2");
  EXPECT_TRUE(h100.nvls);
  EXPECT_DOUBLE_EQ(h100.nvls_efficiency, 0.85);  // tuning.cc nvlsEfficiency, Hopper
  const comm::TopologySpec b300 = TopologyOf("node_type: \"DGX-B300\" nodes: 2");
  EXPECT_TRUE(b300.nvls);
  EXPECT_DOUBLE_EQ(b300.nvls_efficiency, 0.74);  // Blackwell
  EXPECT_DOUBLE_EQ(b300.nic_Gbps, 800);
  EXPECT_FALSE(h100.sharp);
  EXPECT_TRUE(TopologyOf("gpu: \"H100\" nodes: 2 topology { sharp: true }").sharp);
}

TEST(CatalogueTopologyTest, AGraceHopperNodeIsOneGpuBehindItsNicWithoutNvls) {
  // The GPU alone names its node type (the first catalogue node that holds it).
  const comm::TopologySpec gh = TopologyOf("gpu: \"GH200\" nodes: 4");
  EXPECT_EQ(gh.gpus_per_node, 1);
  EXPECT_EQ(gh.nics_per_node, 1);
  EXPECT_FALSE(gh.nvls);  // NVLink SHARP needs an NVSwitch
  EXPECT_DOUBLE_EQ(gh.nic_Gbps, 400);
}

TEST(CatalogueTopologyTest, LlCeilingInsideANodeFollowsTheGpuGeneration) {
  // tuning.cc llMaxBws, one node: Ampere 87.7, Hopper 141, Blackwell 2 x 141 GB/s; across nodes
  // the host's row (Intel: 39.0 for two nodes, 20.4 for more), whatever the GPU.
  EXPECT_DOUBLE_EQ(TopologyOf("gpu: \"A100\" nodes: 2").ll_max_one_node_GBps, 87.7);
  EXPECT_DOUBLE_EQ(TopologyOf("gpu: \"H100\" nodes: 2").ll_max_one_node_GBps, 141.0);
  const comm::TopologySpec b300 = TopologyOf("node_type: \"DGX-B300\" nodes: 2");
  EXPECT_DOUBLE_EQ(b300.ll_max_one_node_GBps, 282.0);
  EXPECT_DOUBLE_EQ(b300.ll_max_two_nodes_GBps, 39.0);
  EXPECT_DOUBLE_EQ(b300.ll_max_more_nodes_GBps, 20.4);
}

TEST(CatalogueTopologyTest, RoceCostsHeadersAndEcmpCollisionsOnTheUplinks) {
  const comm::TopologySpec ib = TopologyOf("gpu: \"H100\" nodes: 2");
  const comm::TopologySpec roce = TopologyOf("gpu: \"H100\" nodes: 2 nic: \"RoCE-400\"");
  const comm::TopologySpec sx = TopologyOf("gpu: \"H100\" nodes: 2 nic: \"SpectrumX-400\"");
  EXPECT_DOUBLE_EQ(ib.uplink_efficiency, 1.0);
  // ECMP: F flows hashed onto F up-links use 1 − (1 − 1/F)^F → 1 − 1/e of them.
  EXPECT_NEAR(roce.uplink_efficiency, 1.0 - std::exp(-1.0), 1e-12);
  EXPECT_DOUBLE_EQ(sx.uplink_efficiency, 0.95);  // Spectrum-X adaptive routing (NVIDIA)
  // RoCEv2 carries 82 header bytes per 4096-byte MTU against InfiniBand's 26.
  EXPECT_NEAR(roce.nic_efficiency / ib.nic_efficiency, 4122.0 / 4178.0, 1e-12);
  EXPECT_GT(roce.nic_latency_us, ib.nic_latency_us);
  // SHARP is an InfiniBand switch feature: not on an Ethernet fabric.
  EXPECT_FALSE(
      TopologyOf("gpu: \"H100\" nodes: 2 nic: \"RoCE-400\" topology { sharp: true }").sharp);
}

}  // namespace
}  // namespace trainsim::scenarios
