#include "step/ep_overlap.h"

#include <algorithm>

namespace trainsim::step {

double CombinedLayerSeconds(const EpOverlapParts& p) {
  // Phase 1: the backward's combine all-to-all beside the forward's attention.
  const double combine_b_done = p.combine_bwd + p.combine_post_bwd;
  const double attn_f_done = p.pre_dispatch_fwd;
  // Phase 2: the forward's dispatch needs the attention's tokens; the backward's expert data
  // gradients need the combine's gradients. The backward's dispatch follows the forward's on
  // the communication stream and needs the expert data gradients; the forward's experts follow
  // the delayed weight gradients on the compute stream and need the dispatched tokens.
  const double phase2 = std::max(attn_f_done, combine_b_done);
  const double dispatch_f_done = phase2 + p.dispatch_fwd;
  const double mlp_b_dgrad_done = phase2 + p.mlp_bwd_dgrad;
  const double mlp_b_wgrad_done = mlp_b_dgrad_done + p.mlp_bwd_wgrad;
  const double mlp_b_out = p.delay_wgrad ? mlp_b_dgrad_done : mlp_b_wgrad_done;
  const double dispatch_b_done = std::max(dispatch_f_done, mlp_b_out) + p.dispatch_bwd;
  const double mlp_f_done = std::max(mlp_b_wgrad_done, dispatch_f_done) + p.mlp_fwd;
  // Phase 3: the forward's combine needs the experts' output; the backward's attention needs
  // the dispatch's gradients.
  const double combine_f_done =
      std::max(mlp_f_done, dispatch_b_done) + p.combine_fwd + p.combine_post_fwd;
  const double attn_b_done = std::max(mlp_f_done, dispatch_b_done) + p.pre_dispatch_bwd;
  return std::max(combine_f_done, attn_b_done);
}

double ExposedEpSeconds(const EpOverlapParts& p) {
  return std::max(0.0, CombinedLayerSeconds(p) - p.compute());
}

}  // namespace trainsim::step
