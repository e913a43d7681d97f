// Linear modules one GEMM computes together, and their weights packed for it at load: a layer's
// q/k/v projections and its gate/up projections read the same input, so their weights, stacked by
// rows in one storage, make one larger (and on a GPU one faster) matrix product instead of three or
// two small ones (weights_group.h reads them so).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/model_config.h"

namespace linear_ard::model {

// The groups of one layer's modules, by HF names: {q_proj, k_proj, v_proj} and {gate_proj, up_proj}.
std::vector<std::vector<std::string>> weights_groups(int64_t layer);

// Packs each group's weights (and biases, where every module of the group has one) back to back in
// one storage, replacing the map's tensors by views of it with the same names, shapes and values;
// a group whose tensors differ in dtype, device or columns, or are already packed, is left as is.
void weights_group_pack(const ModelConfig& config, std::map<std::string, torch::Tensor>& tensors);

// The tensors stacked by rows as one view, when they already lie back to back, in order, in one
// storage, contiguous and with no autograd history; nullopt otherwise.
std::optional<torch::Tensor> weights_rows_view(const std::vector<torch::Tensor>& ts);

// True when the tensors can be stacked by rows without a dtype promotion or a device move.
bool weights_stackable(const std::vector<torch::Tensor>& ts);

}  // namespace linear_ard::model
