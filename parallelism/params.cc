// Parameter counts of parallelism/model.h: the whole model, one layer, one GPU's share.
#include "parallelism/model.h"

namespace trainsim::parallelism {

int64_t LayerParameterCount(const ModelSpec& m, bool /*moe_layer*/) {
  const int64_t h = m.hidden, f = m.ffn(), kvw = m.kv_width();
  const int64_t attn = h * (h + 2 * kvw) + (h + 2 * kvw) + h * h + h;
  const int64_t mlp = m.swiglu ? 3 * h * f + 2 * f + h : 2 * h * f + f + h;
  const int64_t norms = 4 * h;
  return attn + mlp + norms;
}

int64_t LayerParametersPerTpRank(const ModelSpec& m, int tp) {
  const int64_t h = m.hidden, f = m.ffn(), t = tp, kvw = m.kv_width();
  // Column-parallel QKV and MLP-up (weights and biases split), row-parallel output and MLP-down
  // (weights split, biases replicated), layer norms replicated.
  const int64_t attn = h * (h + 2 * kvw) / t + (h + 2 * kvw) / t + h * h / t + h;
  const int64_t mlp = m.swiglu ? 3 * h * f / t + 2 * f / t + h : h * f / t + f / t + f * h / t + h;
  return attn + mlp + 4 * h;
}

int64_t ParameterCount(const ModelSpec& m) {
  return int64_t(m.num_layers) * LayerParameterCount(m) +
         (int64_t(m.vocab) + m.seq_len) * int64_t(m.hidden);
}

int64_t ActiveParameterCount(const ModelSpec& m) { return ParameterCount(m); }

ParamSplit LayerParametersPerGpu(const ModelSpec& m, TensorSplit split, bool /*moe_layer*/) {
  return {double(LayerParametersPerTpRank(m, split.tp)), 0.0};
}

}  // namespace trainsim::parallelism
