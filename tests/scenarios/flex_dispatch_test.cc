// The FLEX dispatcher's all-to-alls as HybridEP's kernels run them (step/flex_dispatch.h),
// against HybridEP's published kernel-only benchmark (deepseek-ai/DeepEP, docs/README_Hybrid-
// EP.md on the hybrid-ep branch, tables of 2025-11-18): per rank 4,096 tokens of hidden 7,168
// in BF16, top-8, 8 experts per rank, uniform routing. Each leg is timed by comm's all-to-all on
// the catalogue's machines (the scenarios below give the cluster), as the step simulation times
// it. No training row enters: the two efficiencies come from this table alone.
#include "step/flex_dispatch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/topology.h"
#include "parallelism/model.h"
#include "scenarios/scenario.h"
#include "scenarios/step_config.h"

namespace trainsim::scenarios {
namespace {

constexpr double kTokens = 4096, kHidden = 7168, kTopK = 8, kExpertsPerRank = 8;

// P(a token's top-8 of `experts`, drawn uniformly without replacement, includes at least one of
// the experts of a given group, the experts spread evenly over `groups`).
double HitProbability(int experts, int groups) {
  double miss = 1;
  for (int i = 0; i < int(kTopK); ++i)
    miss *= double(experts - experts / groups - i) / (experts - i);
  return 1 - miss;
}

// The cluster of the scenario at `path`; nodes > 0: that many DGX H100 nodes instead (the
// layout is data-parallel over them, tp = pp = 1 as in that scenario).
comm::Topology TopologyOf(const std::string& path, int nodes = 0) {
  Result<pb::Scenario> s = LoadScenario(path);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (nodes > 0) {
    s->mutable_cluster()->set_nodes(nodes);
    s->mutable_parallelism()->set_dp(8 * nodes);
  }
  Result<ResolvedScenario> r = Resolve(*s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  Result<step::StepConfig> c = MakeStepConfig(*r);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return comm::Topology::Build(c->topology).value();
}

double AllToAllSeconds(const comm::Topology& t, int gpus, double bytes) {
  const comm::CollectiveSpec spec{comm::Op::kAllToAll, comm::Algo::kAuto, comm::FirstGpus(gpus),
                                  uint64_t(bytes)};
  Result<comm::CollectiveEstimate> e = comm::EstimateCollective(t, spec);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e->time.seconds();
}

// Across DGX H100 nodes (8 GPUs, one 400 Gb/s NIC each). The table's "IB bandwidth" divides
// tokens × nodes hit × hidden × 2 bytes by the kernel's time, counting the rank's own node too
// (tests/test_hybrid_ep.py, count_rdma_send_from_routing_map), so time = those bytes / GB/s.
TEST(FlexDispatchTest, HybridEpKernelsAcrossH100NodesTakeWhatTheirPublishedBenchmarkMeasured) {
  const struct {
    int ranks;
    double dispatch_GBps, combine_GBps;  // kernel only, 16 SMs
  } rows[] = {{16, 71.71, 62.95}, {32, 57.69, 57.46}, {64, 49.97, 49.77}};
  for (const auto& row : rows) {
    const int nodes = row.ranks / 8;
    const int experts = int(kExpertsPerRank) * row.ranks;
    const comm::Topology t = TopologyOf(
        "scenarios/validation/checks/bridge_skill_qwen3_30b_a3b_bf16_h100.textproto", nodes);
    const double copies = kTokens * kTopK * kHidden * 2;
    // The legs as parallelism/model_comm.cc sizes them: deduplicated per node over the whole
    // group, per rank over the 8 ranks of one node.
    const double network = AllToAllSeconds(
        t, row.ranks, copies * parallelism::FlexDedupFactor(experts, int(kTopK), nodes));
    const double nvlink = AllToAllSeconds(
        t, 8, copies * parallelism::FlexDedupFactor(experts, int(kTopK), row.ranks));
    const double model = step::FlexSeconds(network, nvlink);
    const double ib_bytes = kTokens * nodes * HitProbability(experts, nodes) * kHidden * 2;
    for (double GBps : {row.dispatch_GBps, row.combine_GBps}) {
      const double published = ib_bytes / (GBps * 1e9);
      EXPECT_LT(std::fabs(model / published - 1), 0.10)
          << row.ranks << " ranks: " << model << " s against " << published << " s";
    }
    // On two nodes most of a token's copies stay inside the node: the NVLink leg binds there,
    // the network leg beyond.
    EXPECT_EQ(nvlink / step::kHybridEpForwardEfficiency > network / step::kHybridEpKernelEfficiency,
              nodes == 2)
        << row.ranks;
  }
}

// Inside one NVLink domain (B200: 8 GPUs; GB200 NVL72) the table's bandwidth divides the tokens
// the rank receives, once per rank hit and its own included (dispatched_hidden.numel() × 2), by
// the kernel's time.
TEST(FlexDispatchTest,
     HybridEpKernelsInsideOneNvlinkDomainTakeWhatTheirPublishedBenchmarkMeasured) {
  const struct {
    const char* scenario;
    int ranks;
    double dispatch_GBps, combine_GBps;  // kernel only
  } rows[] = {
      {"scenarios/validation/bridge_b200_qwen3_30b_a3b_mxfp8.textproto", 8, 734.95, 673.84},
      {"scenarios/validation/bridge_gb200_gpt_oss_120b_mxfp8.textproto", 8, 764.03, 737.13},
      {"scenarios/validation/bridge_gb200_gpt_oss_120b_mxfp8.textproto", 16, 706.95, 666.26},
      {"scenarios/validation/bridge_gb200_gpt_oss_120b_mxfp8.textproto", 32, 642.23, 605.15},
  };
  for (const auto& row : rows) {
    const int experts = int(kExpertsPerRank) * row.ranks;
    const comm::Topology t = TopologyOf(row.scenario);
    const double received = kTokens * row.ranks * HitProbability(experts, row.ranks) * kHidden * 2;
    const double model = step::FlexSeconds(AllToAllSeconds(t, row.ranks, received), 0);
    for (double GBps : {row.dispatch_GBps, row.combine_GBps}) {
      const double published = received / (GBps * 1e9);
      EXPECT_LT(std::fabs(model / published - 1), 0.10)
          << row.scenario << " " << row.ranks << ": " << model << " s against " << published;
    }
  }
}

}  // namespace
}  // namespace trainsim::scenarios
