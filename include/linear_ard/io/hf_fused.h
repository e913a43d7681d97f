// hf_fused: checkpoints whose projections are stored fused (Phi-3's self_attn.qkv_proj = q|k|v rows
// and mlp.gate_up_proj = gate|up rows) read as the separate q/k/v and gate/up tensors the model
// uses, and written back fused.
#pragma once

#include <string>

#include "linear_ard/io/safetensors.h"
#include "linear_ard/model/model_config.h"

namespace linear_ard::io {

// Replaces each fused tensor of `tensors` by its parts, views of its rows under the separate names
// (so they lie back to back, as weights_group_pack would put them, without a copy). A family
// without fused projections is left as is. Throws std::runtime_error naming a fused tensor whose
// shape is not the one config.json implies (e.g. "model.layers.0.self_attn.qkv_proj.weight has
// shape [96, 64], config.json implies [(4 + 2 x 2) x 16, 64] = [128, 64]").
void hf_fused_split(const model::ModelConfig& config, TensorMap& tensors);

// `tensors` with the separate parts joined back into the fused tensors the family stores (a copy
// of each group, rows in order), ready to save; the same map for other families.
TensorMap hf_fused_join(const model::ModelConfig& config, const TensorMap& tensors);

// The name under which the family's checkpoint stores tensor `name` ("...q_proj.weight" ->
// "...qkv_proj.weight" for Phi-3): for errors that point into the files.
std::string hf_fused_name(const model::ModelConfig& config, const std::string& name);

}  // namespace linear_ard::io
