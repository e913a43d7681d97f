// config.json parsing and writing for the supported families (model_family.h), RoPE scaling included.
#include "linear_ard/io/hf_config.h"

#include <stdexcept>
#include <string>

#include "linear_ard/model/model_family.h"  // defines: model_family_find, SlidingRule

namespace linear_ard::io {
namespace {

using nlohmann::json;
using model::ModelConfig;
using model::RopeConfig;
using model::RopeType;

[[noreturn]] void config_error(const std::string& key, const std::string& what, const json& got) {
  throw std::invalid_argument("config.json: " + key + " " + what + ", got " + got.dump());
}

// A present, non-null value under `key`, or nullptr.
const json* config_find(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::optional<int64_t> config_int(const json& obj, const std::string& key, const std::string& path,
                                  int64_t min_value) {
  const json* v = config_find(obj, key);
  if (!v) return std::nullopt;
  // 4096.0 is an integer in JSON's number model; transformers accepts it.
  const bool integral = v->is_number_integer() ||
                        (v->is_number_float() &&
                         v->get<double>() == static_cast<double>(static_cast<int64_t>(v->get<double>())));
  if (!integral) config_error(path, "must be an integer", *v);
  const auto value = static_cast<int64_t>(v->get<double>());
  if (value < min_value) config_error(path, "must be >= " + std::to_string(min_value), *v);
  return v->is_number_integer() ? v->get<int64_t>() : value;
}

int64_t config_int_required(const json& obj, const std::string& key, int64_t min_value) {
  auto v = config_int(obj, key, key, min_value);
  if (!v) throw std::invalid_argument("config.json: missing required key " + key);
  return *v;
}

std::optional<double> config_number(const json& obj, const std::string& key,
                                    const std::string& path, bool positive) {
  const json* v = config_find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) config_error(path, "must be a number", *v);
  if (positive && v->get<double>() <= 0) config_error(path, "must be > 0", *v);
  return v->get<double>();
}

std::optional<bool> config_bool(const json& obj, const std::string& key, const std::string& path) {
  const json* v = config_find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) config_error(path, "must be true or false", *v);
  return v->get<bool>();
}

std::optional<std::string> config_string(const json& obj, const std::string& key) {
  const json* v = config_find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) config_error(key, "must be a string", *v);
  return v->get<std::string>();
}

std::vector<double> config_number_list(const json& obj, const std::string& key,
                                       const std::string& path) {
  const json* v = config_find(obj, key);
  if (!v) return {};
  if (!v->is_array()) config_error(path, "must be a list of numbers", *v);
  std::vector<double> out;
  for (const json& x : *v) {
    if (!x.is_number()) config_error(path, "must be a list of numbers", *v);
    out.push_back(x.get<double>());
  }
  return out;
}

// The keys of one rope dict other than its type, each checked for its JSON type and range; `s`
// prefixes their names in errors. rope_theta and partial_rotary_factor fall back to `defaults`.
RopeConfig rope_fields(const json& r, const std::string& s, const RopeConfig& defaults) {
  RopeConfig rope;
  rope.theta = config_number(r, "rope_theta", s + "rope_theta", true).value_or(defaults.theta);
  rope.partial_rotary_factor = config_number(r, "partial_rotary_factor", s + "partial_rotary_factor", true);
  if (!rope.partial_rotary_factor) rope.partial_rotary_factor = defaults.partial_rotary_factor;
  rope.factor = config_number(r, "factor", s + "factor", true);
  rope.original_max_position_embeddings =
      config_int(r, "original_max_position_embeddings", s + "original_max_position_embeddings", 1);
  rope.attention_factor = config_number(r, "attention_factor", s + "attention_factor", true);
  rope.beta_fast = config_number(r, "beta_fast", s + "beta_fast", false);
  rope.beta_slow = config_number(r, "beta_slow", s + "beta_slow", false);
  rope.mscale = config_number(r, "mscale", s + "mscale", false);
  rope.mscale_all_dim = config_number(r, "mscale_all_dim", s + "mscale_all_dim", false);
  rope.truncate = config_bool(r, "truncate", s + "truncate");
  rope.low_freq_factor = config_number(r, "low_freq_factor", s + "low_freq_factor", true);
  rope.high_freq_factor = config_number(r, "high_freq_factor", s + "high_freq_factor", true);
  rope.short_factor = config_number_list(r, "short_factor", s + "short_factor");
  rope.long_factor = config_number_list(r, "long_factor", s + "long_factor");
  return rope;
}

// The dict's rope_type (or the older `type`), or nullopt when it names none.
std::optional<std::string> rope_type_text(const json& r, const std::string& s) {
  const json* type = config_find(r, "rope_type");
  if (!type) type = config_find(r, "type");
  if (!type) return std::nullopt;
  if (!type->is_string()) config_error(s + "rope_type", "must be a string", *type);
  return type->get<std::string>();
}

RopeType rope_type_parse(const std::string& name, const std::string& s) {
  try {
    return model::rope_type_from_name(name);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("config.json: " + s + "rope_type: " + e.what());
  }
}

RopeConfig rope_from_json(const json& j, const ModelConfig& config) {
  // transformers 5 stores everything in rope_parameters; hub checkpoints use rope_scaling. When a
  // folder has both, transformers 5.23 (RotaryEmbeddingConfigMixin.convert_rope_params_to_dict)
  // takes a non-empty rope_scaling *instead of* rope_parameters, with rope_theta from it, else from
  // the top level, else 1e4: so do we, even where that drops a theta rope_parameters holds.
  const json* params = config_find(j, "rope_parameters");
  const json* scaling = config_find(j, "rope_scaling");
  if (params && !params->is_object()) config_error("rope_parameters", "must be an object", *params);
  if (scaling && !scaling->is_object()) config_error("rope_scaling", "must be an object", *scaling);
  const bool use_scaling = scaling && !scaling->empty();
  json r = use_scaling ? *scaling : (params ? *params : json::object());
  const std::string section = use_scaling || !params ? "rope_scaling" : "rope_parameters";
  const std::string s = section + ".";

  RopeConfig top;
  top.theta = config_number(j, "rope_theta", "rope_theta", true).value_or(10000.0);
  top.partial_rotary_factor = config_number(j, "partial_rotary_factor", "partial_rotary_factor", true);
  RopeConfig rope = rope_fields(r, s, top);
  std::string type = rope_type_text(r, s).value_or("default");
  // Phi3Config renames the su and yarn of early Phi-3 checkpoints to longrope.
  if (config.model_type == "phi3" && (type == "su" || type == "yarn")) type = "longrope";
  rope.type = rope_type_parse(type, s);

  const model::ModelFamily& family = model::model_family_of(config);
  if (!model::model_family_takes_rope(family, rope.type))
    config_error(s + "rope_type", std::string("is not one ") + family.architecture + " takes (" +
                                      model::model_family_rope_names(family) + ")", r.value("rope_type", r.value("type", json())));
  if (const auto key = model::rope_config_missing(rope))
    throw std::invalid_argument("config.json: " + s + *key + " is required for rope type " + type);
  if (rope.type == RopeType::kLlama3 && *rope.high_freq_factor <= *rope.low_freq_factor)
    config_error(s + "high_freq_factor", "must be > low_freq_factor", r["high_freq_factor"]);
  if (rope.type == RopeType::kLongrope) {
    const auto half = static_cast<size_t>(model::rope_rotary_dim(config, rope) / 2);
    if (rope.short_factor.size() != half)
      config_error(s + "short_factor", "must have " + std::to_string(half) + " entries", r["short_factor"]);
    if (rope.long_factor.size() != half)
      config_error(s + "long_factor", "must have " + std::to_string(half) + " entries", r["long_factor"]);
  }
  return rope;
}

// The keys whose meaning or default depends on the family (model_family.h), as its config class reads
// them: biases only where the modeling class reads them, the window and its rules, head_dim.
void family_keys_parse(const json& j, const model::ModelFamily& family, ModelConfig& c) {
  c.head_dim = config_int(j, "head_dim", "head_dim", 1);
  if (!c.head_dim) c.head_dim = family.default_head_dim;
  c.rms_norm_eps = config_number(j, "rms_norm_eps", "rms_norm_eps", true).value_or(family.default_rms_norm_eps);
  c.max_position_embeddings = config_int(j, "max_position_embeddings", "max_position_embeddings", 1)
                                  .value_or(family.default_max_positions);
  c.original_max_position_embeddings =
      config_int(j, "original_max_position_embeddings", "original_max_position_embeddings", 1);
  if (!c.original_max_position_embeddings) c.original_max_position_embeddings = family.default_original_max_positions;
  if (family.reads_attention_bias) c.attention_bias = config_bool(j, "attention_bias", "attention_bias").value_or(false);
  if (family.reads_mlp_bias) c.mlp_bias = config_bool(j, "mlp_bias", "mlp_bias").value_or(false);
  if (family.sliding == model::SlidingRule::kNone) return;
  // An explicit null disables the window; absent, the class default applies.
  c.sliding_window = j.contains("sliding_window") ? config_int(j, "sliding_window", "sliding_window", 1)
                                                  : family.default_sliding_window;
  if (family.sliding != model::SlidingRule::kQwen) return;
  c.use_sliding_window = config_bool(j, "use_sliding_window", "use_sliding_window");
  c.max_window_layers = config_int(j, "max_window_layers", "max_window_layers", 0);
  if (const json* lt = config_find(j, "layer_types")) {
    if (!lt->is_array()) config_error("layer_types", "must be a list of strings", *lt);
    for (const json& x : *lt) {
      if (!x.is_string()) config_error("layer_types", "must be a list of strings", *lt);
      c.layer_types.push_back(x.get<std::string>());
    }
  }
}

void token_ids_parse(const json& j, ModelConfig& c) {
  c.bos_token_id = config_int(j, "bos_token_id", "bos_token_id", 0);
  c.pad_token_id = config_int(j, "pad_token_id", "pad_token_id", 0);
  const json* eos = config_find(j, "eos_token_id");
  if (!eos) return;
  if (!eos->is_array()) {
    c.eos_token_ids.push_back(*config_int(j, "eos_token_id", "eos_token_id", 0));
    return;
  }
  for (const json& x : *eos) {
    if (!x.is_number_integer()) config_error("eos_token_id", "must be an integer or a list of integers", *eos);
    c.eos_token_ids.push_back(x.get<int64_t>());
  }
}

}  // namespace

ModelConfig hf_config_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("config.json: must be a JSON object");
  ModelConfig c;
  c.model_type = config_string(j, "model_type").value_or("llama");
  const model::ModelFamily* family = model::model_family_find(c.model_type);
  if (!family)
    throw std::invalid_argument("config.json: model_type \"" + c.model_type + "\" is not supported (supported: " +
                                model::model_family_names() + ")");
  if (const json* a = config_find(j, "architectures")) {
    if (!a->is_array()) config_error("architectures", "must be a list of strings", *a);
    for (const json& x : *a) {
      if (!x.is_string()) config_error("architectures", "must be a list of strings", *a);
      c.architectures.push_back(x.get<std::string>());
    }
  }
  c.vocab_size = config_int_required(j, "vocab_size", 1);
  c.hidden_size = config_int_required(j, "hidden_size", 1);
  c.intermediate_size = config_int_required(j, "intermediate_size", 1);
  c.num_hidden_layers = config_int_required(j, "num_hidden_layers", 1);
  c.num_attention_heads = config_int_required(j, "num_attention_heads", 1);
  c.num_key_value_heads =
      config_int(j, "num_key_value_heads", "num_key_value_heads", 1).value_or(c.num_attention_heads);
  family_keys_parse(j, *family, c);
  c.tie_word_embeddings = config_bool(j, "tie_word_embeddings", "tie_word_embeddings").value_or(false);
  c.hidden_act = config_string(j, "hidden_act").value_or("silu");
  // transformers 5 writes `dtype`; earlier versions `torch_dtype`.
  c.torch_dtype = config_string(j, "dtype").value_or(config_string(j, "torch_dtype").value_or(""));
  token_ids_parse(j, c);
  c.rope = rope_from_json(j, c);
  try {
    model::model_config_validate(c);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("config.json: ") + e.what());
  }
  return c;
}

model::RopeConfig hf_rope_dict_from_json(const json& dict, const model::RopeConfig& defaults) {
  if (!dict.is_object()) throw std::invalid_argument("must be a map with rope_type, got " + dict.dump());
  try {
    RopeConfig rope = rope_fields(dict, "", defaults);
    rope.type = rope_type_parse(rope_type_text(dict, "").value_or("default"), "");
    return rope;
  } catch (const std::invalid_argument& e) {
    // The keys' own errors say "config.json: <key> ..."; this dict is not a config.json.
    const std::string what = e.what(), head = "config.json: ";
    throw std::invalid_argument(what.rfind(head, 0) == 0 ? what.substr(head.size()) : what);
  }
}

namespace {

// The entries of scaled RoPE's dict that transformers 5.23 validates for each type
// (RotaryEmbeddingConfigMixin._validate_<type>_rope_parameters), nothing more: any other key
// makes it warn "Unrecognized keys in rope_parameters" on every load. yarn, llama3 and longrope
// require original_max_position_embeddings, which transformers fills in when absent: written as
// it resolves it. rope_theta and partial_rotary_factor are not among them (the caller adds them).
json rope_scaling_entries(const ModelConfig& c) {
  const RopeConfig& r = c.rope;
  json s = json::object();
  s["rope_type"] = model::rope_type_name(r.type);
  auto put = [&](const char* key, const std::optional<double>& v) {
    if (v) s[key] = *v;
  };
  put("factor", r.factor);
  switch (r.type) {
    case RopeType::kDefault:
    case RopeType::kLinear:
    case RopeType::kDynamic:
      break;
    case RopeType::kYarn:
      put("attention_factor", r.attention_factor);
      put("beta_fast", r.beta_fast);
      put("beta_slow", r.beta_slow);
      put("mscale", r.mscale);
      put("mscale_all_dim", r.mscale_all_dim);
      if (r.truncate) s["truncate"] = *r.truncate;
      s["original_max_position_embeddings"] = model::rope_original_max_positions(c, r);
      break;
    case RopeType::kLlama3:
      put("low_freq_factor", r.low_freq_factor);
      put("high_freq_factor", r.high_freq_factor);
      s["original_max_position_embeddings"] = model::rope_original_max_positions(c, r);
      break;
    case RopeType::kLongrope:
      put("attention_factor", r.attention_factor);
      s["short_factor"] = r.short_factor;
      s["long_factor"] = r.long_factor;
      s["original_max_position_embeddings"] = model::rope_original_max_positions(c, r);
      break;
  }
  return s;
}

}  // namespace

json hf_config_to_json(const ModelConfig& c, const json& original) {
  json j = original.is_object() ? original : json::object();
  // The weights written are floats: a checkpoint's quantization no longer describes them.
  j.erase("quantization_config");
  j["model_type"] = c.model_type;
  if (!c.architectures.empty()) j["architectures"] = c.architectures;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  if (c.head_dim) j["head_dim"] = *c.head_dim;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["max_position_embeddings"] = c.max_position_embeddings;
  if (c.original_max_position_embeddings)
    j["original_max_position_embeddings"] = *c.original_max_position_embeddings;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = c.hidden_act;
  const model::ModelFamily& family = model::model_family_of(c);
  if (family.reads_attention_bias) j["attention_bias"] = c.attention_bias;
  if (family.reads_mlp_bias) j["mlp_bias"] = c.mlp_bias;
  if (family.sliding != model::SlidingRule::kNone)
    j["sliding_window"] = c.sliding_window ? json(*c.sliding_window) : json(nullptr);
  if (!c.layer_types.empty()) j["layer_types"] = c.layer_types;
  if (c.use_sliding_window) j["use_sliding_window"] = *c.use_sliding_window;
  if (c.max_window_layers) j["max_window_layers"] = *c.max_window_layers;
  // transformers 5 writes `dtype`; it warns that `torch_dtype` is deprecated on every load.
  j.erase("torch_dtype");
  if (!c.torch_dtype.empty()) j["dtype"] = c.torch_dtype;
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids.front();
  if (c.eos_token_ids.size() > 1) j["eos_token_id"] = c.eos_token_ids;

  // rope_parameters exactly as transformers 5.23's save_pretrained writes it; rope_theta and
  // rope_scaling (null when unscaled) for readers of the legacy form. transformers 5 reads a
  // non-empty rope_scaling instead of rope_parameters, with the top-level rope_theta: the two
  // describe the same RoPE, so either reader builds the same rope_parameters.
  const RopeConfig& r = c.rope;
  const json scaling = rope_scaling_entries(c);
  json params = scaling;
  params["rope_theta"] = r.theta;
  if (r.partial_rotary_factor) {
    params["partial_rotary_factor"] = *r.partial_rotary_factor;
    j["partial_rotary_factor"] = *r.partial_rotary_factor;
  }
  j["rope_parameters"] = params;
  j["rope_theta"] = r.theta;
  j["rope_scaling"] = r.type == RopeType::kDefault ? json(nullptr) : scaling;
  return j;
}

}  // namespace linear_ard::io
