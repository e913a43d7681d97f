// The SwiGLU feed-forward block of LLaMA: down(silu(gate(x)) * up(x)).
#pragma once

#include <string>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"

namespace linear_ard::model {

// `prefix` names the block ("model.layers.3.mlp"); weights resolve through `overrides`.
torch::Tensor mlp_forward(const LlamaWeights& weights, const Overrides& overrides,
                          const std::string& prefix, const torch::Tensor& x);

}  // namespace linear_ard::model
