// trainable_set: QKV / LoRA / full trainable tensors, the student's overrides, merged and PEFT saves.
#include "linear_ard/train/trainable_set.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "linear_ard/io/hf_fused.h"   // defines: hf_fused_name
#include "linear_ard/io/json_file.h"  // defines: json_file_write

namespace linear_ard::train {
namespace {

// Every tensor of the model, in the map's order.
std::vector<std::string> full_names(const model::LlamaWeights& weights) {
  std::vector<std::string> names;
  for (const auto& [name, t] : weights.tensors) names.push_back(name);
  return names;
}

// The q/k/v weights and biases the checkpoint holds of layers 0..last_layer, layer by layer.
std::vector<std::string> qkv_names(const io::TensorMap& checkpoint, int64_t last_layer) {
  std::vector<std::string> names;
  for (int64_t l = 0; l <= last_layer; ++l)
    for (const char* proj : {"q_proj", "k_proj", "v_proj"})
      for (const char* part : {"weight", "bias"}) {
        const std::string name = "model.layers." + std::to_string(l) + ".self_attn." + proj + "." + part;
        if (checkpoint.count(name)) names.push_back(name);
      }
  return names;
}

// The (out, in) sides of each projection an adapter of `mode` wraps in one layer.
std::vector<std::pair<double, double>> adapted_sides(Trainable mode, const model::ModelConfig& c) {
  const auto d = static_cast<double>(model::model_config_head_dim(c));
  const auto h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.intermediate_size);
  const double q = static_cast<double>(c.num_attention_heads) * d, kv = static_cast<double>(c.num_key_value_heads) * d;
  std::vector<std::pair<double, double>> sides{{q, h}, {kv, h}, {kv, h}};
  if (mode == Trainable::kLoraAll) sides.insert(sides.end(), {{h, q}, {f, h}, {f, h}, {h, f}});
  return sides;
}

}  // namespace

double trainable_parameters_planned(Trainable mode, const LoraConfig& lora, const model::ModelConfig& c,
                                    int64_t last_layer) {
  const auto layers = static_cast<double>(last_layer + 1);
  if (mode == Trainable::kFull) return model::model_config_param_count(c);
  if (mode == Trainable::kQkv) {
    const auto sides = adapted_sides(mode, c);
    double per_layer = 0;
    for (const auto& [out, in] : sides) per_layer += out * in + (model::model_config_qkv_bias(c) ? out : 0);
    return layers * per_layer;
  }
  double per_layer = 0, smallest = 0;
  for (const auto& [out, in] : adapted_sides(mode, c)) {
    per_layer += static_cast<double>(lora.rank) * (out + in);
    smallest = smallest == 0 ? std::min(out, in) : std::min({smallest, out, in});
  }
  if (static_cast<double>(lora.rank) > smallest)
    throw std::invalid_argument("config key 'lora.rank' (" + std::to_string(lora.rank) +
                                ") exceeds the smaller side of an adapted matrix (" +
                                std::to_string(static_cast<int64_t>(smallest)) +
                                "): a rank beyond it adds no capacity, only memory");
  return layers * per_layer;
}

TrainableSet::TrainableSet(Trainable mode, const LoraConfig& lora, const io::TensorMap& checkpoint,
                           const model::LlamaWeights& weights, int64_t last_layer, const torch::Device& device)
    : lora_config_(lora), config_(weights.config), last_layer_(last_layer), num_layers_(weights.config.num_hidden_layers) {
  if (mode == Trainable::kFull || mode == Trainable::kQkv) {
    names_ = mode == Trainable::kFull ? full_names(weights) : qkv_names(checkpoint, last_layer);
    masters_.emplace(names_, checkpoint, num_layers_, device);
    parameters_ = masters_->parameters();
    for (const auto& unit : masters_->unit_masters()) held_->unit_add(unit);
    return;
  }
  lora_ = true;
  target_modules_ = {"q_proj", "k_proj", "v_proj"};
  if (mode == Trainable::kLoraAll) target_modules_ = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  for (int64_t l = 0; l <= last_layer; ++l) {
    for (const auto& proj : target_modules_) {
      const bool mlp = proj == "gate_proj" || proj == "up_proj" || proj == "down_proj";
      const std::string module = "model.layers." + std::to_string(l) + (mlp ? ".mlp." : ".self_attn.") + proj;
      const torch::Tensor& w = checkpoint.at(module + ".weight");
      const int64_t out = w.size(0), in = w.size(1);
      // kaiming_uniform_(a=sqrt(5)) on [r, in]: bound = 1 / sqrt(in).
      const double bound = 1.0 / std::sqrt(static_cast<double>(in));
      auto a = torch::rand({lora.rank, in}, torch::kFloat).mul_(2 * bound).sub_(bound).to(device);
      auto b = torch::zeros({out, lora.rank}, torch::TensorOptions(torch::kFloat).device(device));
      modules_.push_back(module);
      names_.push_back(module + ".lora_A");
      parameters_.push_back(a.set_requires_grad(true));
      names_.push_back(module + ".lora_B");
      parameters_.push_back(b.set_requires_grad(true));
    }
  }
  for (const auto& p : parameters_) held_->unit_add({p});
}

int64_t TrainableSet::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters_) n += p.numel();
  return n;
}

model::Overrides TrainableSet::overrides(torch::ScalarType dtype, bool training, bool hold, bool defer) const {
  if (!defer) return casts(dtype, training, hold, {});
  const auto in_layers = [](const std::string& name) { return name.rfind("model.layers.", 0) == 0; };
  model::Overrides o = casts(dtype, training, hold, [&](const std::string& name) { return !in_layers(name); });
  auto deferred = std::make_shared<model::DeferredCasts>();
  deferred->cast = [this, dtype, training, hold](const std::string& prefix) {
    return casts(dtype, training, hold, [&](const std::string& name) { return name.rfind(prefix, 0) == 0; });
  };
  deferred->leaves = [this](const std::string& prefix) {
    std::vector<torch::Tensor> out;
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i].rfind(prefix, 0) == 0) out.push_back(parameters_[i]);
    return out;
  };
  o.deferred = std::move(deferred);
  return o;
}

model::Overrides TrainableSet::casts(torch::ScalarType dtype, bool training, bool hold,
                                     const std::function<bool(const std::string&)>& which) const {
  if (!lora_) return masters_->overrides(dtype, hold ? held_ : c10::intrusive_ptr<HeldGradients>(), which, recast_bytes_);
  const double scale = lora_config_.alpha / static_cast<double>(lora_config_.rank);
  const double dropout = training ? lora_config_.dropout : 0.0;
  const auto cast = [&](size_t i) {
    const torch::Tensor& p = parameters_[i];
    return hold ? held_cast(p.detach(), p, dtype, held_, static_cast<int64_t>(i)) : p.to(dtype);
  };
  const auto source = [&](size_t i) {
    const torch::Tensor& p = parameters_[i];
    return p.numel() * static_cast<int64_t>(c10::elementSize(dtype)) >= recast_bytes_ ? p.detach() : torch::Tensor();
  };
  model::Overrides o;
  for (size_t m = 0; m < modules_.size(); ++m)
    if (!which || which(modules_[m]))
      o.lora[modules_[m]] = model::LoraAdapter{cast(2 * m), cast(2 * m + 1), scale, dropout, source(2 * m),
                                               source(2 * m + 1)};
  return o;
}

io::TensorMap TrainableSet::merged(const io::TensorMap& checkpoint) const {
  torch::NoGradGuard no_grad;
  io::TensorMap out = checkpoint;
  if (!lora_) {
    for (size_t i = 0; i < names_.size(); ++i)
      out[names_[i]] = parameters_[i].detach().to(torch::kCPU, checkpoint.at(names_[i]).scalar_type()).contiguous();
    // A tied checkpoint that still stores lm_head.weight must keep it equal to the trained embedding.
    if (out.count("lm_head.weight") && out.count("model.embed_tokens.weight") &&
        std::find(names_.begin(), names_.end(), "lm_head.weight") == names_.end() &&
        std::find(names_.begin(), names_.end(), "model.embed_tokens.weight") != names_.end())
      out["lm_head.weight"] = out["model.embed_tokens.weight"];
    return out;
  }
  const double scale = lora_config_.alpha / static_cast<double>(lora_config_.rank);
  for (size_t m = 0; m < modules_.size(); ++m) {
    const std::string name = modules_[m] + ".weight";
    const torch::Tensor& w = checkpoint.at(name);
    const auto a = parameters_[2 * m].detach().to(torch::kCPU);
    const auto b = parameters_[2 * m + 1].detach().to(torch::kCPU);
    out[name] = (w.to(torch::kFloat) + scale * torch::matmul(b, a)).to(w.scalar_type()).contiguous();
  }
  return out;
}

// PEFT's adapters target the modules the checkpoint stores: where it fuses projections (Phi-3's
// qkv_proj, gate_up_proj) the adapters of the parts become one on the fused module, A stacked and
// B block-diagonal, so that B A is the parts' B A stacked by rows; rank and alpha both grow by the
// number of parts (rank_pattern / alpha_pattern), which keeps the scale alpha / r.
TrainableSet::PeftAdapters TrainableSet::peft_adapters() const {
  PeftAdapters out;
  std::vector<std::string> order;  // fused modules in first-seen order
  std::map<std::string, std::vector<size_t>> parts;
  for (size_t m = 0; m < modules_.size(); ++m) {
    std::string stored = io::hf_fused_name(config_, modules_[m] + ".weight");
    stored.resize(stored.size() - std::string(".weight").size());
    if (!parts.count(stored)) order.push_back(stored);
    parts[stored].push_back(m);
  }
  for (const std::string& module : order) {
    std::vector<torch::Tensor> as, bs;
    for (size_t m : parts[module]) {
      as.push_back(parameters_[2 * m].detach().to(torch::kCPU));
      bs.push_back(parameters_[2 * m + 1].detach().to(torch::kCPU));
    }
    out.tensors["base_model.model." + module + ".lora_A.weight"] = torch::cat(as, 0);
    out.tensors["base_model.model." + module + ".lora_B.weight"] = torch::block_diag(bs);
    const std::string name = module.substr(module.rfind('.') + 1);
    if (std::find(out.target_modules.begin(), out.target_modules.end(), name) == out.target_modules.end())
      out.target_modules.push_back(name);
    const auto n = static_cast<int64_t>(parts[module].size());
    if (n > 1) {
      out.rank_pattern[name] = lora_config_.rank * n;
      out.alpha_pattern[name] = lora_config_.alpha * static_cast<double>(n);
    }
  }
  return out;
}

void TrainableSet::adapters_save(const std::string& folder, const std::string& base_model) const {
  if (!lora_) throw std::logic_error("adapters_save: no LoRA adapters");
  const PeftAdapters adapters = peft_adapters();
  io::safetensors_save(folder + "/adapter_model.safetensors", adapters.tensors);
  // PEFT wraps target_modules in every layer unless told which: the adapters stop at last_layer_.
  nlohmann::json layers_to_transform = nullptr, layers_pattern = nullptr;
  if (last_layer_ + 1 < num_layers_) {
    layers_to_transform = nlohmann::json::array();
    for (int64_t l = 0; l <= last_layer_; ++l) layers_to_transform.push_back(l);
    layers_pattern = "layers";
  }
  io::json_file_write(folder + "/adapter_config.json",
                      {{"peft_type", "LORA"},
                       {"task_type", "CAUSAL_LM"},
                       {"base_model_name_or_path", base_model},
                       {"r", lora_config_.rank},
                       {"lora_alpha", lora_config_.alpha},
                       {"rank_pattern", adapters.rank_pattern},
                       {"alpha_pattern", adapters.alpha_pattern},
                       {"lora_dropout", lora_config_.dropout},
                       {"layers_to_transform", layers_to_transform},
                       {"layers_pattern", layers_pattern},
                       {"target_modules", adapters.target_modules},
                       {"bias", "none"},
                       {"fan_in_fan_out", false},
                       {"inference_mode", true},
                       {"init_lora_weights", true},
                       {"use_rslora", false},
                       {"use_dora", false},
                       {"modules_to_save", nullptr}});
}

io::TensorMap TrainableSet::state() const {
  io::TensorMap out;
  for (size_t i = 0; i < names_.size(); ++i) out[names_[i]] = parameters_[i].detach().to(torch::kCPU);
  return out;
}

void TrainableSet::state_load(const io::TensorMap& state) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < names_.size(); ++i) {
    const auto it = state.find(names_[i]);
    if (it == state.end()) throw std::runtime_error("checkpoint has no trainable tensor " + names_[i]);
    if (!it->second.sizes().equals(parameters_[i].sizes()))
      throw std::runtime_error("checkpoint tensor " + names_[i] + " has another shape than the run's");
    parameters_[i].copy_(it->second);
  }
}

}  // namespace linear_ard::train
