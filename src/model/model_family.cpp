// The supported decoder families and their differences, as transformers 5.23's config and modeling
// classes of each define them (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, Phi3Config).
#include "linear_ard/model/model_family.h"

#include <stdexcept>

namespace linear_ard::model {
namespace {

const std::vector<ModelFamily>& families() {
  static const std::vector<ModelFamily> all = {
      {"llama", "LlamaForCausalLM", false, true, true, false, false, false, SlidingRule::kNone, std::nullopt,
       std::nullopt, 2048, 1e-6, std::nullopt, {}},
      // MistralAttention has no biases at all; the window applies to every layer.
      {"mistral", "MistralForCausalLM", false, false, false, false, false, false, SlidingRule::kEveryLayer, 4096,
       std::nullopt, 4096 * 32, 1e-6, std::nullopt, {}},
      {"qwen2", "Qwen2ForCausalLM", true, false, false, false, false, false, SlidingRule::kQwen, 4096, std::nullopt,
       32768, 1e-6, std::nullopt, {}},
      // Qwen3Config's head_dim defaults to 128, not hidden_size / heads.
      {"qwen3", "Qwen3ForCausalLM", false, true, false, true, false, false, SlidingRule::kQwen, 4096, 128, 32768,
       1e-6, std::nullopt, {}},
      // Phi3Config: no window unless given, eps 1e-5, original_max_position_embeddings 4096 at the top
      // level, and a rope dict of type default or longrope only (it renames su and yarn to longrope);
      // Phi3ForCausalLM reruns generation at the longrope switch.
      {"phi3", "Phi3ForCausalLM", false, false, false, false, true, true, SlidingRule::kEveryLayer, std::nullopt,
       std::nullopt, 4096, 1e-5, 4096, {RopeType::kDefault, RopeType::kLongrope}},
  };
  return all;
}

}  // namespace

const ModelFamily* model_family_find(const std::string& model_type) {
  for (const ModelFamily& f : families())
    if (model_type == f.model_type) return &f;
  return nullptr;
}

const ModelFamily& model_family_of(const ModelConfig& config) {
  const ModelFamily* f = model_family_find(config.model_type);
  if (!f)
    throw std::invalid_argument("model_type \"" + config.model_type + "\" is not supported (supported: " +
                                model_family_names() + ")");
  return *f;
}

std::string model_family_names() {
  std::string out;
  for (const ModelFamily& f : families()) out += (out.empty() ? "" : ", ") + std::string(f.model_type);
  return out;
}

bool model_family_takes_rope(const ModelFamily& family, RopeType type) {
  if (family.rope_types.empty()) return true;
  for (RopeType t : family.rope_types)
    if (t == type) return true;
  return false;
}

std::string model_family_rope_names(const ModelFamily& family) {
  std::string out;
  for (RopeType t : {RopeType::kDefault, RopeType::kLinear, RopeType::kDynamic, RopeType::kYarn,
                     RopeType::kLlama3, RopeType::kLongrope})
    if (model_family_takes_rope(family, t)) out += (out.empty() ? "" : ", ") + std::string(rope_type_name(t));
  return out;
}

}  // namespace linear_ard::model
