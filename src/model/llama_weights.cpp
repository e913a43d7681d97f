// Shared frozen checkpoint tensors, their validation, and lookups through per-model overrides.
#include "linear_ard/model/llama_weights.h"

#include <functional>
#include <regex>
#include <set>
#include <stdexcept>
#include <vector>

#include "linear_ard/model/linear_recast.h"  // defines: linear_recast
#include "linear_ard/model/memory_fit.h"  // defines: memory_fit_check, model_config_sizes_text
#include "linear_ard/model/weights_pack.h"  // defines: weights_group_pack

namespace linear_ard::model {
namespace {

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  bool required;
};

// Calls `visit` with every tensor a config implies, with its shape, until it returns false.
// Optional ones (biases not announced by the config) are still checked for shape when a
// checkpoint carries them. Lazy, so that a config claiming 1e12 layers costs nothing before the
// first layer the checkpoint lacks.
void llama_expected_tensors_each(const ModelConfig& c, const std::function<bool(const ExpectedTensor&)>& visit) {
  const int64_t d = model_config_head_dim(c), h = c.hidden_size, f = c.intermediate_size;
  const int64_t q = c.num_attention_heads * d, kv = c.num_key_value_heads * d;
  const bool qkv_bias = model_config_qkv_bias(c);
  std::vector<ExpectedTensor> top{{"model.embed_tokens.weight", {c.vocab_size, h}, true},
                                  {"model.norm.weight", {h}, true}};
  if (!c.tie_word_embeddings) top.push_back({"lm_head.weight", {c.vocab_size, h}, true});
  for (const ExpectedTensor& e : top)
    if (!visit(e)) return;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const std::vector<ExpectedTensor> layer{
        {p + "input_layernorm.weight", {h}, true},
        {p + "post_attention_layernorm.weight", {h}, true},
        {p + "self_attn.q_proj.weight", {q, h}, true},
        {p + "self_attn.k_proj.weight", {kv, h}, true},
        {p + "self_attn.v_proj.weight", {kv, h}, true},
        {p + "self_attn.o_proj.weight", {h, q}, true},
        {p + "self_attn.q_proj.bias", {q}, qkv_bias},
        {p + "self_attn.k_proj.bias", {kv}, qkv_bias},
        {p + "self_attn.v_proj.bias", {kv}, qkv_bias},
        {p + "self_attn.o_proj.bias", {h}, c.attention_bias},
        {p + "mlp.gate_proj.weight", {f, h}, true},
        {p + "mlp.up_proj.weight", {f, h}, true},
        {p + "mlp.down_proj.weight", {h, f}, true},
        {p + "mlp.gate_proj.bias", {f}, c.mlp_bias},
        {p + "mlp.up_proj.bias", {f}, c.mlp_bias},
        {p + "mlp.down_proj.bias", {h}, c.mlp_bias},
    };
    for (const ExpectedTensor& e : layer)
      if (!visit(e)) return;
    if (!model_config_qk_norm(c)) continue;
    for (const char* norm : {"self_attn.q_norm.weight", "self_attn.k_norm.weight"})
      if (!visit({p + norm, {d}, true})) return;
  }
}

std::string shape_string(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The layer-tensor names a config may imply (biases included: a checkpoint may carry those its
// config does not announce), and the one transformers ignores (old checkpoints' saved RoPE buffer).
bool layer_tensor_known(const std::string& suffix) {
  static const std::set<std::string> known{
      "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
      "self_attn.v_proj.weight", "self_attn.o_proj.weight",        "self_attn.q_proj.bias",   "self_attn.k_proj.bias",
      "self_attn.v_proj.bias",   "self_attn.o_proj.bias",          "mlp.gate_proj.weight",    "mlp.up_proj.weight",
      "mlp.down_proj.weight",    "mlp.gate_proj.bias",             "mlp.up_proj.bias",        "mlp.down_proj.bias",
      "self_attn.rotary_emb.inv_freq"};
  return known.count(suffix) > 0;
}

// The first of `tensors` the config has no place for: a layer at or beyond num_hidden_layers (a
// config.json that lost layers would otherwise evaluate a shorter model without a word), or a
// name of another architecture (its weights would be dropped).
std::optional<WeightsMismatch> llama_weights_unexpected(const ModelConfig& c,
                                                        const std::map<std::string, torch::Tensor>& tensors) {
  static const std::regex layer(R"(model\.layers\.(\d{1,18})\.(.+))");
  for (const auto& [name, t] : tensors) {
    if (name == "model.embed_tokens.weight" || name == "model.norm.weight" || name == "lm_head.weight") continue;
    std::smatch m;
    if (std::regex_match(name, m, layer)) {
      const int64_t index = std::stoll(m[1].str());
      if (index >= c.num_hidden_layers)
        return WeightsMismatch{name, name + " belongs to layer " + std::to_string(index) + ", but num_hidden_layers=" +
                                         std::to_string(c.num_hidden_layers) + " gives layers 0 to " +
                                         std::to_string(c.num_hidden_layers - 1) +
                                         ": the weights hold more layers than the config"};
      const std::string suffix = m[2].str();
      const bool qk_norm = suffix == "self_attn.q_norm.weight" || suffix == "self_attn.k_norm.weight";
      if (layer_tensor_known(suffix) || (qk_norm && model_config_qk_norm(c))) continue;  // Qwen3's per-head norms
    }
    return WeightsMismatch{name, "unexpected tensor " + name + ": no tensor of that name is part of a " +
                                     c.model_type + " model (LLaMA-family layout)"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<WeightsMismatch> llama_weights_mismatch(const ModelConfig& config,
                                                     const std::map<std::string, torch::Tensor>& tensors) {
  std::optional<WeightsMismatch> mismatch;
  llama_expected_tensors_each(config, [&](const ExpectedTensor& e) {
    const auto it = tensors.find(e.name);
    if (it == tensors.end()) {
      if (e.required) mismatch = WeightsMismatch{e.name, "missing tensor " + e.name};
    } else if (it->second.sizes() != c10::IntArrayRef(e.shape)) {
      mismatch = WeightsMismatch{e.name, e.name + " has shape " + shape_string(it->second.sizes()) +
                                             ", config implies " + shape_string(e.shape)};
    }
    return !mismatch;
  });
  if (!mismatch) mismatch = llama_weights_unexpected(config, tensors);
  return mismatch;
}

LlamaWeights llama_weights_from_map(const ModelConfig& config,
                                    std::map<std::string, torch::Tensor> tensors) {
  model_config_validate(config);
  // transformers ties lm_head to the embeddings and ignores a stored copy.
  if (config.tie_word_embeddings) tensors.erase("lm_head.weight");
  if (const auto mismatch = llama_weights_mismatch(config, tensors))
    throw std::invalid_argument("checkpoint: " + mismatch->message);
  weights_group_pack(config, tensors);  // group by group: the originals go as their copies come
  LlamaWeights weights{config, {}};
  llama_expected_tensors_each(config, [&](const ExpectedTensor& e) {
    if (const auto it = tensors.find(e.name); it != tensors.end())
      weights.tensors.emplace(e.name, it->second.detach().requires_grad_(false));
    return true;
  });
  return weights;
}

LlamaWeights llama_weights_random(const ModelConfig& config, torch::ScalarType dtype,
                                  torch::Device device, uint64_t seed, double std) {
  model_config_validate(config);
  memory_fit_check(model_config_param_count(config), dtype, device, "config (" + model_config_sizes_text(config) + ")");
  torch::manual_seed(seed);
  // Drawn in fp32 on `device` itself (a 7B model never passes through host memory), then cast.
  const auto fp32 = torch::TensorOptions(torch::kFloat).device(device);
  std::map<std::string, torch::Tensor> tensors;
  llama_expected_tensors_each(config, [&](const ExpectedTensor& e) {
    if (!e.required) return true;
    const bool is_norm = e.name.find("norm.weight") != std::string::npos;
    auto t = is_norm ? torch::ones(e.shape, fp32) : torch::randn(e.shape, fp32).mul_(std);
    tensors.emplace(e.name, t.to(dtype));
    return true;
  });
  return llama_weights_from_map(config, std::move(tensors));
}

std::optional<torch::Tensor> weights_find(const LlamaWeights& weights, const Overrides& overrides,
                                          const std::string& name) {
  // A layer's deferred entries are made by overrides_layer; reading past them would silently give
  // the shared weight.
  if (overrides.deferred && name.rfind("model.layers.", 0) == 0)
    throw std::logic_error("weights_find: " + name + " read from overrides whose layers are deferred (use overrides_layer)");
  if (auto it = overrides.replace.find(name); it != overrides.replace.end()) return it->second;
  if (auto it = weights.tensors.find(name); it != weights.tensors.end()) return it->second;
  if (name == "lm_head.weight" && weights.config.tie_word_embeddings)
    return weights_find(weights, overrides, "model.embed_tokens.weight");
  return std::nullopt;
}

torch::Tensor weights_get(const LlamaWeights& weights, const Overrides& overrides,
                          const std::string& name) {
  auto t = weights_find(weights, overrides, name);
  if (!t) throw std::invalid_argument("model: no tensor named " + name);
  return *t;
}

std::vector<torch::Tensor> overrides_trainable(const Overrides& overrides,
                                               const std::string& prefix) {
  std::vector<torch::Tensor> out;
  auto matches = [&](const std::string& name) { return name.rfind(prefix, 0) == 0; };
  for (const auto* tensors : {&overrides.replace, &overrides.stacked})
    for (const auto& [name, t] : *tensors)
      if (matches(name) && t.requires_grad()) out.push_back(t);
  for (const auto& [name, lora] : overrides.lora) {
    if (!matches(name)) continue;
    if (lora.a.requires_grad()) out.push_back(lora.a);
    if (lora.b.requires_grad()) out.push_back(lora.b);
  }
  if (overrides.deferred)
    for (const auto& leaf : overrides.deferred->leaves(prefix))
      if (leaf.requires_grad()) out.push_back(leaf);
  return out;
}

Overrides overrides_under(const Overrides& overrides, const std::string& prefix) {
  auto matches = [&](const std::string& name) { return name.rfind(prefix, 0) == 0; };
  Overrides out;
  for (const auto& [name, t] : overrides.replace)
    if (matches(name)) out.replace.emplace(name, t);
  for (const auto& [name, t] : overrides.stacked)
    if (matches(name)) out.stacked.emplace(name, t);
  for (const auto& [name, lora] : overrides.lora)
    if (matches(name)) out.lora.emplace(name, lora);
  for (const auto& [name, t] : overrides.sources)
    if (matches(name)) out.sources.emplace(name, t);
  for (const auto& [name, t] : overrides.stacked_sources)
    if (matches(name)) out.stacked_sources.emplace(name, t);
  return out;
}

Overrides overrides_layer(const Overrides& overrides, const std::string& prefix) {
  Overrides out = overrides_under(overrides, prefix);
  if (!overrides.deferred) return out;
  const Overrides made = overrides.deferred->cast(prefix);
  out.replace.insert(made.replace.begin(), made.replace.end());
  out.stacked.insert(made.stacked.begin(), made.stacked.end());
  out.lora.insert(made.lora.begin(), made.lora.end());
  out.sources.insert(made.sources.begin(), made.sources.end());
  out.stacked_sources.insert(made.stacked_sources.begin(), made.stacked_sources.end());
  return out;
}

torch::Tensor weights_linear(const LlamaWeights& weights, const Overrides& overrides,
                             const std::string& module, const torch::Tensor& x, const NormedInput* x_from) {
  auto bias = weights_find(weights, overrides, module + ".bias");
  const std::string name = module + ".weight";
  const auto source = overrides.sources.find(name);
  auto y = linear_recast(x, weights_get(weights, overrides, name),
                         source != overrides.sources.end() ? source->second : torch::Tensor(),
                         bias ? *bias : torch::Tensor(), x_from);
  if (auto it = overrides.lora.find(module); it != overrides.lora.end()) {
    const LoraAdapter& lora = it->second;
    const torch::Tensor in = lora.dropout > 0 ? torch::dropout(x, lora.dropout, /*train=*/true) : x;
    const torch::Tensor down = linear_recast(in, lora.a, lora.a_source, {}, lora.dropout > 0 ? nullptr : x_from);
    y = y + linear_recast(down, lora.b, lora.b_source) * lora.scale;
  }
  return y;
}

}  // namespace linear_ard::model
