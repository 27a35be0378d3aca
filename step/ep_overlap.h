// The expert all-to-all overlap as Megatron-Core runs it (--overlap-moe-expert-parallel-comm,
// with --delay-wgrad-compute): in the steady state of 1F1B one micro-batch's forward of a
// layer and another micro-batch's backward of a layer run as one merged step on two CUDA
// streams (megatron/core/models/common/model_chunk_schedule_plan.py,
// TransformerLayerSchedulePlan.run):
//
//   comm stream:  combine_bwd       | dispatch_fwd -> dispatch_bwd        | combine_fwd
//   comp stream:  pre_dispatch_fwd  | mlp_bwd -> mlp_bwd_dw -> mlp_fwd    | pre_dispatch_bwd
//
// Each all-to-all hides only under the compute it is paired with, and waits for the work that
// produces its input. `CombinedLayerSeconds` is the merged step's length from that two-stream
// timeline; `ExposedEpSeconds` is what of it the compute does not cover. Contract: all inputs
// are seconds ≥ 0; the result is ≥ the larger of the two streams' busy time.
#ifndef TRAINSIM_STEP_EP_OVERLAP_H_
#define TRAINSIM_STEP_EP_OVERLAP_H_

namespace trainsim::step {

// One layer's parts in the schedule plan's nodes (fine_grained_callables.py):
//  - pre_dispatch: attention, the pre-MLP norm, the shared experts, the router and the
//    dispatcher's preprocessing (permutation); backward includes its weight gradients.
//  - mlp: the routed experts between dispatch and combine (sorting, padding, grouped GEMMs,
//    activation); backward split into data gradients and the delayed weight gradients.
//  - combine_post: the combine node's compute after its all-to-all (unpermute, residual add),
//    which runs on the communication stream.
//  - dispatch / combine: the EP collectives of each direction.
struct EpOverlapParts {
  double pre_dispatch_fwd = 0, mlp_fwd = 0, combine_post_fwd = 0;
  double pre_dispatch_bwd = 0, mlp_bwd_dgrad = 0, mlp_bwd_wgrad = 0, combine_post_bwd = 0;
  double dispatch_fwd = 0, combine_fwd = 0, dispatch_bwd = 0, combine_bwd = 0;
  // --delay-wgrad-compute: the backward's dispatch needs only the experts' data gradients
  // (false: their weight gradients too, one autograd call computing both).
  bool delay_wgrad = true;
  double compute() const {
    return pre_dispatch_fwd + mlp_fwd + combine_post_fwd + pre_dispatch_bwd + mlp_bwd_dgrad +
           mlp_bwd_wgrad + combine_post_bwd;
  }
  double communication() const { return dispatch_fwd + combine_fwd + dispatch_bwd + combine_bwd; }
};

// The merged forward + backward step of one layer pair, seconds.
double CombinedLayerSeconds(const EpOverlapParts& p);

// The merged step beyond the layer pair's compute: the EP time the overlap leaves exposed.
double ExposedEpSeconds(const EpOverlapParts& p);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_EP_OVERLAP_H_
