// Typed description of a LLaMA-family checkpoint (config.json; the families of model_family.h):
// ModelConfig, its RopeConfig, and the few facts derived from them (head_dim, per-layer sliding
// window, parameter count, summary).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace linear_ard::model {

// The RoPE variants transformers knows for decoder LMs (modeling_rope_utils.ROPE_INIT_FUNCTIONS).
enum class RopeType {
  kDefault,
  kLinear,    // position interpolation: inv_freq / factor
  kDynamic,   // NTK-aware, base grows with the current sequence length
  kYarn,      // NTK-by-parts ramp + attention factor on cos/sin
  kLlama3,    // low/high-frequency wavelength bands
  kLongrope,  // per-frequency short/long factors chosen by sequence length
};

const char* rope_type_name(RopeType type);
// Throws std::invalid_argument naming the value when it is not a known type.
RopeType rope_type_from_name(const std::string& name);

// Every parameter any scaling type reads; unset optionals mean "absent from config.json", which
// matters because transformers derives defaults from absence (e.g. yarn's attention_factor).
struct RopeConfig {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  std::optional<double> factor;
  std::optional<double> partial_rotary_factor;
  // Explicit value from the rope dict; rope_original_max_positions() resolves the fallback.
  std::optional<int64_t> original_max_position_embeddings;
  std::optional<double> attention_factor;              // yarn, longrope
  std::optional<double> beta_fast, beta_slow;          // yarn
  std::optional<double> mscale, mscale_all_dim;        // yarn
  std::optional<bool> truncate;                        // yarn
  std::optional<double> low_freq_factor, high_freq_factor;  // llama3
  std::vector<double> short_factor, long_factor;       // longrope
};

struct ModelConfig {
  std::string model_type = "llama";
  std::vector<std::string> architectures;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  std::optional<int64_t> head_dim;  // explicit in config.json; else hidden_size / heads
  double rms_norm_eps = 1e-6;
  int64_t max_position_embeddings = 2048;
  // Top-level key (Phi-3 style); transformers gives it priority over the one inside the rope dict.
  std::optional<int64_t> original_max_position_embeddings;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v/o biases (Llama, Qwen3); Qwen2 has q/k/v biases by architecture
  bool mlp_bias = false;        // Llama
  std::string hidden_act = "silu";
  // Sliding-window attention: Mistral and Phi-3 apply it to every layer; Qwen2/3 only when
  // use_sliding_window, to layers >= max_window_layers or as layer_types, when given, says.
  std::optional<int64_t> sliding_window;
  std::optional<bool> use_sliding_window;
  std::optional<int64_t> max_window_layers;
  std::vector<std::string> layer_types;
  std::string torch_dtype;  // "bfloat16", "float16", "float32" or empty
  std::optional<int64_t> bos_token_id, pad_token_id;
  std::vector<int64_t> eos_token_ids;
  RopeConfig rope;
};

int64_t model_config_head_dim(const ModelConfig& config);
// The first key a RoPE of its type needs that `rope` lacks ("factor", "low_freq_factor", ...), or
// nullopt: what transformers' rope init function of that type reads without a default.
std::optional<std::string> rope_config_missing(const RopeConfig& rope);
// Whether q/k/v carry biases: attention_bias, or the Qwen2 architecture.
bool model_config_qkv_bias(const ModelConfig& config);
// Whether each head of q and k goes through an RMSNorm (self_attn.q_norm / k_norm) before RoPE: Qwen3.
bool model_config_qk_norm(const ModelConfig& config);
// The window of layer `layer` as transformers applies it, or nullopt for full causal attention.
std::optional<int64_t> model_config_layer_window(const ModelConfig& config, int64_t layer);
// original_max_position_embeddings as transformers resolves it for yarn/llama3/longrope: the
// top-level key, else the rope dict's, else max_position_embeddings.
int64_t rope_original_max_positions(const ModelConfig& config, const RopeConfig& rope);
// Number of rotated dimensions per head: int(head_dim * partial_rotary_factor).
int64_t rope_rotary_dim(const ModelConfig& config, const RopeConfig& rope);
// Parameters of the checkpoint (embeddings, layers, final norm, untied LM head); a double, exact
// below 2^53, so that absurd sizes give a number to refuse rather than an overflow.
double model_config_param_count(const ModelConfig& config);
// Context length the RoPE configuration targets: max_position_embeddings, and for scaled RoPE
// original_max_position_embeddings x factor when that is larger.
int64_t model_config_context_length(const ModelConfig& config);
// Multi-line human summary for `linear-ard inspect`; `parameters`, the weights' own count when they
// were read, replaces the count config.json implies.
std::string model_config_describe(const ModelConfig& config, std::optional<int64_t> parameters = std::nullopt);
// Throws std::invalid_argument on inconsistent sizes (heads not dividing, etc.).
void model_config_validate(const ModelConfig& config);

}  // namespace linear_ard::model
