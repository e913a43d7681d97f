// hf_config: config.json <-> model::ModelConfig for LLaMA-family checkpoints (Llama, Mistral, Qwen2).
#pragma once

#include <nlohmann/json.hpp>

#include "linear_ard/model/model_config.h"

namespace linear_ard::io {

// Parses a config.json object. RoPE comes from transformers 5's `rope_parameters` or the legacy
// `rope_theta` + `rope_scaling` (with `rope_type` or the older `type`); defaults follow transformers
// 5.23 (e.g. Mistral's sliding_window is 4096 when the key is absent). Throws std::invalid_argument
// naming the key, e.g. "config.json: rope_scaling.factor must be > 0, got -2".
model::ModelConfig hf_config_from_json(const nlohmann::json& json);

// Writes `config` on top of `original`, so keys this project does not model are kept.
// RoPE: `rope_parameters` exactly as transformers 5.23 writes it (rope_theta, rope_type and only
// the keys it validates for that type), plus the legacy top-level `rope_theta` and `rope_scaling`
// (the same entries without rope_theta; null for unscaled RoPE), so both readers agree. `dtype` is
// config.torch_dtype; `torch_dtype` (deprecated in transformers 5) and `quantization_config` (the
// written weights are floats) are dropped.
nlohmann::json hf_config_to_json(const model::ModelConfig& config,
                                 const nlohmann::json& original = nlohmann::json::object());

}  // namespace linear_ard::io
