// ModelConfig: derived facts (head_dim, windows, parameter count) and the `inspect` summary.
#include "linear_ard/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "linear_ard/model/model_family.h"  // defines: model_family_of, SlidingRule

namespace linear_ard::model {

const char* rope_type_name(RopeType type) {
  switch (type) {
    case RopeType::kDefault: return "default";
    case RopeType::kLinear: return "linear";
    case RopeType::kDynamic: return "dynamic";
    case RopeType::kYarn: return "yarn";
    case RopeType::kLlama3: return "llama3";
    case RopeType::kLongrope: return "longrope";
  }
  return "?";
}

RopeType rope_type_from_name(const std::string& name) {
  for (RopeType t : {RopeType::kDefault, RopeType::kLinear, RopeType::kDynamic, RopeType::kYarn,
                     RopeType::kLlama3, RopeType::kLongrope}) {
    if (name == rope_type_name(t)) return t;
  }
  throw std::invalid_argument("unknown rope type \"" + name +
                              "\" (expected default, linear, dynamic, yarn, llama3 or longrope)");
}

int64_t model_config_head_dim(const ModelConfig& config) {
  if (config.head_dim) return *config.head_dim;
  return config.hidden_size / config.num_attention_heads;
}

bool model_config_qkv_bias(const ModelConfig& config) {
  return config.attention_bias || model_family_of(config).qkv_bias;
}

bool model_config_qk_norm(const ModelConfig& config) { return model_family_of(config).qk_norm; }

std::optional<int64_t> model_config_layer_window(const ModelConfig& config, int64_t layer) {
  switch (model_family_of(config).sliding) {
    case SlidingRule::kNone:
      return std::nullopt;
    case SlidingRule::kEveryLayer:
      return config.sliding_window;
    case SlidingRule::kQwen:
      // Qwen2Config/Qwen3Config drop the window unless use_sliding_window, whatever layer_types says.
      if (!config.use_sliding_window.value_or(false) || !config.sliding_window) return std::nullopt;
      if (!config.layer_types.empty())
        return config.layer_types.at(layer) == "sliding_attention" ? config.sliding_window : std::nullopt;
      return layer >= config.max_window_layers.value_or(28) ? config.sliding_window : std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> rope_config_missing(const RopeConfig& rope) {
  switch (rope.type) {
    case RopeType::kDefault:
      return std::nullopt;
    case RopeType::kLinear:
    case RopeType::kDynamic:
    case RopeType::kYarn:
      if (!rope.factor) return "factor";
      return std::nullopt;
    case RopeType::kLlama3:
      if (!rope.factor) return "factor";
      if (!rope.low_freq_factor) return "low_freq_factor";
      if (!rope.high_freq_factor) return "high_freq_factor";
      return std::nullopt;
    case RopeType::kLongrope:
      if (rope.short_factor.empty()) return "short_factor";
      if (rope.long_factor.empty()) return "long_factor";
      return std::nullopt;
  }
  return std::nullopt;
}

int64_t rope_original_max_positions(const ModelConfig& config, const RopeConfig& rope) {
  if (config.original_max_position_embeddings) return *config.original_max_position_embeddings;
  return rope.original_max_position_embeddings.value_or(config.max_position_embeddings);
}

int64_t rope_rotary_dim(const ModelConfig& config, const RopeConfig& rope) {
  return static_cast<int64_t>(static_cast<double>(model_config_head_dim(config)) *
                              rope.partial_rotary_factor.value_or(1.0));
}

double model_config_param_count(const ModelConfig& c) {
  // In doubles: a config.json with num_hidden_layers 1e12 must give a number to refuse, not an
  // int64 overflow.
  const auto h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.intermediate_size);
  const double q = static_cast<double>(c.num_attention_heads) * static_cast<double>(model_config_head_dim(c));
  const double kv = static_cast<double>(c.num_key_value_heads) * static_cast<double>(model_config_head_dim(c));
  double attn = h * (q + 2 * kv) + q * h;
  if (model_config_qkv_bias(c)) attn += q + 2 * kv;
  if (c.attention_bias) attn += h;
  double mlp = 3 * h * f;
  if (c.mlp_bias) mlp += 2 * f + h;
  const double qk_norm = model_config_qk_norm(c) ? 2 * static_cast<double>(model_config_head_dim(c)) : 0;
  const double layer = attn + mlp + 2 * h + qk_norm;
  const double embed = static_cast<double>(c.vocab_size) * h;
  return embed + static_cast<double>(c.num_hidden_layers) * layer + h + (c.tie_word_embeddings ? 0 : embed);
}

int64_t model_config_context_length(const ModelConfig& config) {
  const RopeConfig& rope = config.rope;
  if (rope.type == RopeType::kDefault || !rope.factor) return config.max_position_embeddings;
  // Without an explicit original length, max_position_embeddings is the native length for dynamic
  // NTK (transformers scales from it) but usually already the extended one for the other types
  // (PI checkpoints write 32768 with factor 8), so only dynamic multiplies it.
  const bool explicit_original =
      config.original_max_position_embeddings || rope.original_max_position_embeddings;
  if (!explicit_original && rope.type != RopeType::kDynamic) return config.max_position_embeddings;
  const auto scaled = static_cast<int64_t>(
      std::llround(static_cast<double>(rope_original_max_positions(config, rope)) * *rope.factor));
  return std::max(config.max_position_embeddings, scaled);
}

void model_config_validate(const ModelConfig& c) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("model config: " + what);
  };
  const ModelFamily* family = model_family_find(c.model_type);
  need(family != nullptr, "model_type \"" + c.model_type + "\" is not supported (supported: " + model_family_names() + ")");
  need(model_family_takes_rope(*family, c.rope.type),
       std::string("rope type ") + rope_type_name(c.rope.type) + " is not one " + family->architecture +
           " takes (" + model_family_rope_names(*family) + ")");
  need(c.vocab_size > 0, "vocab_size must be > 0");
  need(c.hidden_size > 0, "hidden_size must be > 0");
  need(c.intermediate_size > 0, "intermediate_size must be > 0");
  need(c.num_hidden_layers > 0, "num_hidden_layers must be > 0");
  need(c.num_attention_heads > 0, "num_attention_heads must be > 0");
  need(c.num_key_value_heads > 0 && c.num_attention_heads % c.num_key_value_heads == 0,
       "num_key_value_heads (" + std::to_string(c.num_key_value_heads) +
           ") must divide num_attention_heads (" + std::to_string(c.num_attention_heads) + ")");
  need(c.head_dim || c.hidden_size % c.num_attention_heads == 0,
       "hidden_size must be divisible by num_attention_heads when head_dim is absent");
  need(c.layer_types.empty() || static_cast<int64_t>(c.layer_types.size()) == c.num_hidden_layers,
       "layer_types must have num_hidden_layers entries");
  need(c.hidden_act == "silu", "hidden_act \"" + c.hidden_act + "\" is not supported (silu only)");
  if (const auto key = rope_config_missing(c.rope))
    need(false, std::string("rope type ") + rope_type_name(c.rope.type) + " needs " + *key);
  if (c.rope.type == RopeType::kLlama3)
    need(*c.rope.high_freq_factor > *c.rope.low_freq_factor, "llama3 high_freq_factor must be > low_freq_factor");
  const int64_t rot = rope_rotary_dim(c, c.rope);
  need(rot > 0 && rot % 2 == 0 && rot <= model_config_head_dim(c),
       "rotary dimension " + std::to_string(rot) + " must be even and within head_dim");
  if (c.rope.type == RopeType::kLongrope) {
    const auto half = static_cast<size_t>(rot / 2);
    need(c.rope.short_factor.size() == half && c.rope.long_factor.size() == half,
         "longrope short_factor/long_factor must have rotary_dim/2 = " + std::to_string(half) +
             " entries");
  }
}

std::string model_config_describe(const ModelConfig& c, std::optional<int64_t> parameters) {
  std::ostringstream out;
  const RopeConfig& r = c.rope;
  // config.json's architectures; without it, the class transformers' AutoModelForCausalLM picks for
  // the model_type.
  if (!c.architectures.empty()) {
    out << "architecture:      " << c.architectures.front() << " (model_type " << c.model_type << ")\n";
  } else {
    out << "architecture:      " << model_family_of(c).architecture << " (model_type " << c.model_type
        << "; config.json names no architectures)\n";
  }
  // In the unit that keeps 3 significant digits: a 50 K-parameter test model is not "0.00 B".
  const double params = parameters ? static_cast<double>(*parameters) : model_config_param_count(c);
  const double unit = params >= 1e9 ? 1e9 : params >= 1e6 ? 1e6 : 1e3;
  out << "parameters:        " << std::fixed << std::setprecision(0) << params << " (" << std::defaultfloat
      << std::setprecision(3) << params / unit << (unit == 1e9 ? " B" : unit == 1e6 ? " M" : " K")
      << (parameters ? "; in the weights' headers" : "") << ")\n";
  out << "layers:            " << c.num_hidden_layers << ", hidden " << c.hidden_size
      << ", intermediate " << c.intermediate_size << ", vocab " << c.vocab_size << "\n";
  out << "attention:         " << c.num_attention_heads << " heads, " << c.num_key_value_heads
      << " kv heads, head_dim " << model_config_head_dim(c)
      << (model_config_qkv_bias(c) ? ", qkv bias" : "") << (model_config_qk_norm(c) ? ", q/k norm" : "");
  if (model_config_layer_window(c, c.num_hidden_layers - 1))
    out << ", sliding window " << *model_config_layer_window(c, c.num_hidden_layers - 1);
  out << "\n";
  out << std::defaultfloat << std::setprecision(10);
  out << "rope:              " << rope_type_name(r.type) << ", theta " << r.theta;
  if (r.factor) out << ", factor " << *r.factor;
  if (r.type == RopeType::kYarn || r.type == RopeType::kLlama3 || r.type == RopeType::kLongrope)
    out << ", original_max_position_embeddings " << rope_original_max_positions(c, r);
  if (r.attention_factor) out << ", attention_factor " << *r.attention_factor;
  if (r.beta_fast) out << ", beta_fast " << *r.beta_fast;
  if (r.beta_slow) out << ", beta_slow " << *r.beta_slow;
  if (r.mscale) out << ", mscale " << *r.mscale;
  if (r.mscale_all_dim) out << ", mscale_all_dim " << *r.mscale_all_dim;
  if (r.low_freq_factor) out << ", low_freq_factor " << *r.low_freq_factor;
  if (r.high_freq_factor) out << ", high_freq_factor " << *r.high_freq_factor;
  if (r.partial_rotary_factor) out << ", partial_rotary_factor " << *r.partial_rotary_factor;
  out << "\n";
  out << "context length:    " << model_config_context_length(c) << " (max_position_embeddings "
      << c.max_position_embeddings << ")\n";
  out << "dtype:             " << (c.torch_dtype.empty() ? std::string("?") : c.torch_dtype)
      << (c.tie_word_embeddings ? ", tied embeddings" : "") << "\n";
  return out.str();
}

}  // namespace linear_ard::model
