// The combined 1F1B timeline of Megatron-Core's expert all-to-all overlap (step/ep_overlap.h),
// against hand-worked schedules of the two streams.
#include "step/ep_overlap.h"

#include <gtest/gtest.h>

namespace trainsim::step {
namespace {

EpOverlapParts Compute(double attn_f, double mlp_f, double attn_b, double mlp_d, double mlp_w) {
  EpOverlapParts p;
  p.pre_dispatch_fwd = attn_f;
  p.mlp_fwd = mlp_f;
  p.pre_dispatch_bwd = attn_b;
  p.mlp_bwd_dgrad = mlp_d;
  p.mlp_bwd_wgrad = mlp_w;
  return p;
}

TEST(EpOverlapTest, WithoutCommunicationTheMergedStepIsTheCompute) {
  const EpOverlapParts p = Compute(0.5, 1, 1.5, 1, 1);
  EXPECT_DOUBLE_EQ(CombinedLayerSeconds(p), 5.0);
  EXPECT_DOUBLE_EQ(ExposedEpSeconds(p), 0.0);
}

TEST(EpOverlapTest, WithoutComputeTheFourAllToAllsRunOneAfterAnother) {
  EpOverlapParts p;
  p.combine_bwd = 1;
  p.dispatch_fwd = 2;
  p.dispatch_bwd = 3;
  p.combine_fwd = 4;
  EXPECT_DOUBLE_EQ(CombinedLayerSeconds(p), 10.0);
  EXPECT_DOUBLE_EQ(ExposedEpSeconds(p), 10.0);
}

// Each all-to-all shorter than the compute it is paired with: the stream timeline (worked by
// hand) ends with the backward attention at 5.5 s, the compute's own length.
TEST(EpOverlapTest, AllToAllsShorterThanTheirPairedComputeHideCompletely) {
  EpOverlapParts p = Compute(/*attn_f=*/1, /*mlp_f=*/1, /*attn_b=*/1.5, /*mlp_d=*/1, /*mlp_w=*/1);
  p.combine_bwd = 0.5;   // under attn_f [0, 1]
  p.dispatch_fwd = 1.5;  // [1, 2.5] under mlp_b [1, 3]
  p.dispatch_bwd = 1.5;  // [2.5, 4] under mlp_w, mlp_f [2, 4]
  p.combine_fwd = 1;     // [4, 5] under attn_b [4, 5.5]
  EXPECT_DOUBLE_EQ(CombinedLayerSeconds(p), 5.5);
  EXPECT_DOUBLE_EQ(ExposedEpSeconds(p), 0.0);
}

// Without --delay-wgrad-compute the same layer pair's backward dispatch waits for the experts'
// whole backward (dgrad and wgrad, [1, 3]): it runs [3, 4.5] where it ran [2.5, 4]; the forward
// experts still run [3, 4], the forward combine [4.5, 5.5] and the backward attention waits
// for the dispatch's gradients: [4.5, 6], 0.5 s exposed.
TEST(EpOverlapTest, WithoutDelayedWgradTheBackwardDispatchWaitsForTheWeightGradients) {
  EpOverlapParts p = Compute(/*attn_f=*/1, /*mlp_f=*/1, /*attn_b=*/1.5, /*mlp_d=*/1, /*mlp_w=*/1);
  p.combine_bwd = 0.5;
  p.dispatch_fwd = 1.5;
  p.dispatch_bwd = 1.5;
  p.combine_fwd = 1;
  p.delay_wgrad = false;
  EXPECT_DOUBLE_EQ(CombinedLayerSeconds(p), 6.0);
  EXPECT_DOUBLE_EQ(ExposedEpSeconds(p), 0.5);
}

// The pairing matters: 2 s of all-to-all against 4.5 s of compute is hidden by "traffic minus
// compute", but the backward's combine can only hide under the forward's attention (0.5 s),
// and everything after it waits for the combine: 1.5 s exposed.
TEST(EpOverlapTest, AnAllToAllLongerThanItsPairedComputeIsExposedEvenWithComputeToSpare) {
  EpOverlapParts p = Compute(0.5, 1, 1, 1, 1);
  p.combine_bwd = 2;
  EXPECT_DOUBLE_EQ(CombinedLayerSeconds(p), 6.0);
  EXPECT_DOUBLE_EQ(ExposedEpSeconds(p), 1.5);
}

// The combine node's unpermute and residual add run on the communication stream after the
// all-to-all; they delay the stream, not the compute.
TEST(EpOverlapTest, CombinePostprocessingRunsOnTheCommunicationStream) {
  EpOverlapParts p = Compute(1, 1, 1, 1, 1);
  p.combine_fwd = 1;
  p.combine_post_fwd = 0.5;
  // Forward combine starts when the forward experts end (4 s) and ends at 5.5 s; the backward
  // attention runs [4, 5].
  EXPECT_DOUBLE_EQ(CombinedLayerSeconds(p), 5.5);
  EXPECT_DOUBLE_EQ(ExposedEpSeconds(p), 5.5 - 5.5);
}

}  // namespace
}  // namespace trainsim::step
