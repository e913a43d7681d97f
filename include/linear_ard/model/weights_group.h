// weights_linear_group: the linear modules of a group (weights_pack.h: a layer's q/k/v, its
// gate/up) computed by one GEMM over their stacked weights.
#pragma once

#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"

namespace linear_ard::model {

// The outputs of weights_linear for each module of `modules`, all reading x, side by side along
// the last dimension ([..., sum of the modules' output features], in the order given), computed by
// one GEMM over their stacked weights. The stacked weight is the overrides' `stacked` tensor of the
// group where there is one (trainable masters cast in one piece, whose gradients flow back through
// it), a view where the weights lie back to back (weights_group_pack), else their concatenation.
// With LoRA on any module, biases on some but not all, or weights of different dtypes, each module
// takes its own weights_linear and the outputs are concatenated. `x_from`: what x is the RMSNorm of
// (linear_recast).
torch::Tensor weights_linear_group(const LlamaWeights& weights, const Overrides& overrides,
                                   const std::vector<std::string>& modules, const torch::Tensor& x,
                                   const NormedInput* x_from = nullptr);

}  // namespace linear_ard::model
