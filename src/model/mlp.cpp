// SwiGLU MLP over the shared weights.
#include "linear_ard/model/mlp.h"

#include "linear_ard/model/fused_swiglu.h"   // defines: swiglu_fused(_supported)
#include "linear_ard/model/weights_group.h"  // defines: weights_linear_group

namespace linear_ard::model {

torch::Tensor mlp_forward(const LlamaWeights& weights, const Overrides& overrides,
                          const std::string& prefix, const torch::Tensor& x) {
  // One GEMM for gate and up: [..., 2 * intermediate].
  auto gate_up = weights_linear_group(weights, overrides, {prefix + ".gate_proj", prefix + ".up_proj"}, x);
  if (swiglu_fused_supported(gate_up))  // CUDA: one kernel each way
    return weights_linear(weights, overrides, prefix + ".down_proj", swiglu_fused(gate_up));
  const int64_t f = weights.config.intermediate_size;
  auto parts = gate_up.split_with_sizes({f, f}, -1);  // a split's gradient: one concatenation
  return weights_linear(weights, overrides, prefix + ".down_proj", torch::silu(parts[0]) * parts[1]);
}

}  // namespace linear_ard::model
