// The bundled comparison of all-reduce bus bandwidth with published nccl-tests results
// (docs/collectives.md, "Comparison with published nccl-tests results"; the rows are in
// ../shared/validation/nccl_allreduce_busbw.csv with their sources). No parameter was fitted to
// these rows: NVLink efficiency 0.80 (comm/topology.h) and NCCL's nvlsEfficiency (tuning.cc:
// Hopper 0.85, Blackwell 0.74) are the only factors.
#include <cstdio>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/topology.h"
#include "gtest/gtest.h"

namespace trainsim::comm {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// One NVSwitch domain of `gpus` GPUs with `nvlink_GBps` per direction.
Topology Domain(int gpus, double nvlink_GBps, bool nvls, double nvls_efficiency) {
  TopologySpec spec;
  spec.nodes = 1;
  spec.gpus_per_node = gpus;
  spec.nics_per_node = gpus;
  spec.nvlink_GBps = nvlink_GBps;
  spec.nvls = nvls;
  if (nvls) spec.nvls_efficiency = nvls_efficiency;
  return Topology::Build(spec).value();
}

struct Row {
  const char* what;
  int gpus;
  double nvlink_GBps;
  double nvls_efficiency;  // 0: NVLS off (NCCL_NVLS_ENABLE=0 or NCCL_ALGO=Ring)
  Algo algo;
  uint64_t bytes;
  double published_GBps;
  const char* source;
};

double ModelBusBw(const Row& r) {
  const Topology t = Domain(r.gpus, r.nvlink_GBps, r.nvls_efficiency > 0, r.nvls_efficiency);
  const CollectiveSpec spec{Op::kAllReduce, r.algo, FirstGpus(r.gpus), r.bytes};
  Result<CollectiveEstimate> e = EstimateCollective(t, spec);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return static_cast<double>(r.bytes) / e->time.seconds() / 1e9 *
         BusBandwidthFactor(Op::kAllReduce, r.gpus);
}

// Rows the model holds within ±10% (H100/H200 NVLink 4: 450 GB/s per direction; B200/B300
// NVLink 5: 900).
const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = {
      {"8x H100 NVLS (maintainer: peak ~480)", 8, 450, 0.85, Algo::kAuto, 8 * kGiB, 480,
       "github.com/NVIDIA/nccl-tests/issues/212"},
      {"8x H100 NVLS (NVIDIA staff: 476 expected)", 8, 450, 0.85, Algo::kAuto, 8 * kGiB, 476,
       "github.com/NVIDIA/nccl-tests/issues/290"},
      {"7x H100 NVLS", 7, 450, 0.85, Algo::kNvls, 4 * kGiB, 460,
       "github.com/NVIDIA/nccl/issues/1455"},
      {"6x H100 NVLS", 6, 450, 0.85, Algo::kNvls, 4 * kGiB, 440,
       "github.com/NVIDIA/nccl/issues/1455"},
      {"5x H100 NVLS", 5, 450, 0.85, Algo::kNvls, 4 * kGiB, 420,
       "github.com/NVIDIA/nccl/issues/1455"},
      {"8x H100 ring (maintainer: ~370)", 8, 450, 0, Algo::kAuto, 8 * kGiB, 370,
       "github.com/NVIDIA/nccl-tests/issues/212"},
      {"8x H200 NVLS, Azure ND H200 v5, 8 GB", 8, 450, 0.85, Algo::kAuto, 8 * kGiB, 479.98,
       "github.com/Azure/AI-benchmarking-guide ND_H200_v5_results.md"},
      {"8x H200 default (peak)", 8, 450, 0.85, Algo::kAuto, 4 * kGiB, 475,
       "github.com/NVIDIA/nccl-tests/issues/272"},
      {"8x B200 default", 8, 900, 0.74, Algo::kAuto, 8 * kGiB, 830,
       "github.com/NVIDIA/nccl/issues/1807"},
      {"8x B300 NVLS on", 8, 900, 0.74, Algo::kAuto, 8 * kGiB, 845,
       "github.com/NVIDIA/nccl/issues/2140"},
      {"8x B300 NVLS off (ring)", 8, 900, 0, Algo::kAuto, 8 * kGiB, 695,
       "github.com/NVIDIA/nccl/issues/2140"},
      {"4x GB200 ring, Azure ND GB200 v6, 8 GB", 4, 900, 0, Algo::kRing, 8 * kGiB, 679.61,
       "github.com/Azure/AI-benchmarking-guide ND_GB200_v6_results.md"},
  };
  return rows;
}

TEST(PublishedBusBandwidthNvlsTest, SingleDomainRowsWithinTenPercent) {
  for (const Row& r : Rows()) {
    const double model = ModelBusBw(r);
    EXPECT_NEAR(model, r.published_GBps, 0.10 * r.published_GBps)
        << r.what << " (" << r.source << ")";
    std::printf("%-45s published %7.1f  model %7.1f  error %+5.1f%%\n", r.what, r.published_GBps,
                model, 100.0 * (model / r.published_GBps - 1.0));
  }
}

TEST(PublishedBusBandwidthNvlsTest, AutoUsesNvlsWhereThePublishedRunsDid) {
  // nccl-tests' default all-reduce on 8 H100 / H200 / B300 is NVLS (the published peaks exceed
  // what the ring can reach: 2(n−1)/n · S over 0.80 of NVLink).
  for (double nvlink : {450.0, 900.0}) {
    const Topology t = Domain(8, nvlink, true, nvlink > 450 ? 0.74 : 0.85);
    EXPECT_EQ(EstimateCollective(t, {Op::kAllReduce, Algo::kAuto, FirstGpus(8), 8 * kGiB})->algo,
              Algo::kNvls);
  }
}

TEST(PublishedBusBandwidthNvlsTest, Nvl72RackIsNvlsAndTheModelIsAnUpperBound) {
  // A full GB200 NVL72 rack (72 GPUs in one NVLink domain), nccl-tests default at 8 GB:
  // 834.6 and 846.8 GB/s (github.com/coreweave/nccl-tests/pull/43). Above the ring's 720, so
  // NCCL ran NVLS. The model's NVLS traffic rule, (n+1)/n · S per GPU at 0.74 · 0.80 of 900 GB/s,
  // gives more: what limits NVLS across 72 GPUs further is not modelled (docs/collectives.md).
  const Topology t = Domain(72, 900, true, 0.74);
  const CollectiveSpec spec{Op::kAllReduce, Algo::kAuto, FirstGpus(72), 8 * kGiB};
  Result<CollectiveEstimate> e = EstimateCollective(t, spec);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->algo, Algo::kNvls);
  const double busbw =
      static_cast<double>(spec.bytes) / e->time.seconds() / 1e9 * BusBandwidthFactor(spec.op, 72);
  EXPECT_GT(busbw, 846.8);
}

}  // namespace
}  // namespace trainsim::comm
