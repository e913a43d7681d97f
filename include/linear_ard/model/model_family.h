// The decoder families the model implements (config.json's model_type) and what sets each apart
// in transformers 5.23: biases, per-head q/k norms, fused projections, sliding-window rule, the
// config defaults that differ, and the RoPE types its config class accepts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "linear_ard/model/model_config.h"

namespace linear_ard::model {

// How a family applies config.json's sliding_window.
enum class SlidingRule {
  kNone,        // Llama: full causal attention everywhere
  kEveryLayer,  // Mistral, Phi-3: every layer when sliding_window is set
  kQwen,        // Qwen2/3: only with use_sliding_window, from max_window_layers on (or layer_types)
};

struct ModelFamily {
  const char* model_type;    // config.json's model_type
  const char* architecture;  // transformers' causal-LM class
  bool qkv_bias;             // q/k/v carry biases by architecture, whatever attention_bias says (Qwen2)
  bool reads_attention_bias;  // attention_bias adds q/k/v/o biases (Llama, Qwen3); others ignore it
  bool reads_mlp_bias;       // mlp_bias adds gate/up/down biases (Llama)
  bool qk_norm;              // RMSNorm over each head of q and k before RoPE (Qwen3)
  bool fused_projections;    // checkpoint holds qkv_proj and gate_up_proj (Phi-3)
  // Generation drops the KV cache when the sequence reaches original_max_position_embeddings + 1
  // tokens and reruns it whole, so that longrope's long factors apply to every key (Phi-3).
  bool longrope_rerun;
  SlidingRule sliding;
  std::optional<int64_t> default_sliding_window;  // when config.json lacks the key
  std::optional<int64_t> default_head_dim;        // else hidden_size / heads
  int64_t default_max_positions;
  double default_rms_norm_eps;
  // Phi3Config's class default for the top-level key, which transformers gives priority.
  std::optional<int64_t> default_original_max_positions;
  // RoPE types the config class accepts; empty: every type modeling_rope_utils knows.
  std::vector<RopeType> rope_types;
};

// The family of `model_type`, or nullptr when it is not one of model_family_names().
const ModelFamily* model_family_find(const std::string& model_type);
// The family of a config (its model_type must be supported: hf_config_from_json checks it).
const ModelFamily& model_family_of(const ModelConfig& config);
// "llama, mistral, qwen2, qwen3, phi3": for errors naming what is supported.
std::string model_family_names();
// Whether `family` accepts a RoPE of `type` in its config.json.
bool model_family_takes_rope(const ModelFamily& family, RopeType type);
// The RoPE types `family` accepts, e.g. "default, longrope".
std::string model_family_rope_names(const ModelFamily& family);

}  // namespace linear_ard::model
