// SwiGLU MLP over the shared weights.
#include "linear_ard/model/mlp.h"

namespace linear_ard::model {

torch::Tensor mlp_forward(const LlamaWeights& weights, const Overrides& overrides,
                          const std::string& prefix, const torch::Tensor& x) {
  auto gate = weights_linear(weights, overrides, prefix + ".gate_proj", x);
  auto up = weights_linear(weights, overrides, prefix + ".up_proj", x);
  return weights_linear(weights, overrides, prefix + ".down_proj", torch::silu(gate) * up);
}

}  // namespace linear_ard::model
