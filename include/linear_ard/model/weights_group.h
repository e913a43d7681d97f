// Linear modules one GEMM computes together: a layer's q/k/v projections and its gate/up
// projections read the same input, so their weights, stacked by rows, make one larger (and on a GPU
// one faster) matrix product instead of three or two small ones.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"

namespace linear_ard::model {

// The groups of one layer's modules, by HF names: {q_proj, k_proj, v_proj} and {gate_proj, up_proj}.
std::vector<std::vector<std::string>> weights_groups(int64_t layer);

// Packs each group's weights (and biases, where every module of the group has one) back to back in
// one storage, replacing the map's tensors by views of it with the same names, shapes and values;
// a group whose tensors differ in dtype, device or columns, or are already packed, is left as is.
void weights_group_pack(const ModelConfig& config, std::map<std::string, torch::Tensor>& tensors);

// The outputs of weights_linear for each module of `modules`, all reading x, side by side along
// the last dimension ([..., sum of the modules' output features], in the order given), computed by
// one GEMM over their stacked weights. The stacked weight is the overrides' `stacked` tensor of the
// group where there is one (trainable masters cast in one piece, whose gradients flow back through
// it), a view where the weights lie back to back (weights_group_pack), else their concatenation.
// With LoRA on any module, biases on some but not all, or weights of different dtypes, each module
// takes its own weights_linear and the outputs are concatenated.
torch::Tensor weights_linear_group(const LlamaWeights& weights, const Overrides& overrides,
                                   const std::vector<std::string>& modules, const torch::Tensor& x);

}  // namespace linear_ard::model
