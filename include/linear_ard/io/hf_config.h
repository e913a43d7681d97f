// hf_config: config.json <-> model::ModelConfig for the supported families (Llama, Mistral, Qwen2,
// Qwen3, Phi-3: model_family.h), and a rope dict alone -> model::RopeConfig.
#pragma once

#include <nlohmann/json.hpp>

#include "linear_ard/model/model_config.h"

namespace linear_ard::io {

// Parses a config.json object. RoPE comes from transformers 5's `rope_parameters` or the legacy
// `rope_theta` + `rope_scaling` (with `rope_type` or the older `type`); defaults follow transformers
// 5.23 (e.g. Mistral's sliding_window is 4096 when the key is absent). Throws std::invalid_argument
// naming the key, e.g. "config.json: rope_scaling.factor must be > 0, got -2".
model::ModelConfig hf_config_from_json(const nlohmann::json& json);

// One rope dict as transformers reads it (rope_type or type, the keys of every type, each checked
// for its JSON type and range), with rope_theta and partial_rotary_factor from `defaults` when it
// lacks them; unlike config.json, keys a type needs may be absent (rope_compose inherits them).
// Throws std::invalid_argument naming the key, e.g. "factor must be > 0, got -2".
model::RopeConfig hf_rope_dict_from_json(const nlohmann::json& dict, const model::RopeConfig& defaults);

// Writes `config` on top of `original`, so keys this project does not model are kept.
// RoPE: `rope_parameters` exactly as transformers 5.23 writes it (rope_theta, rope_type and only
// the keys it validates for that type), plus the legacy top-level `rope_theta` and `rope_scaling`
// (the same entries without rope_theta; null for unscaled RoPE), so both readers agree. `dtype` is
// config.torch_dtype; `torch_dtype` (deprecated in transformers 5) and `quantization_config` (the
// written weights are floats) are dropped.
nlohmann::json hf_config_to_json(const model::ModelConfig& config,
                                 const nlohmann::json& original = nlohmann::json::object());

}  // namespace linear_ard::io
