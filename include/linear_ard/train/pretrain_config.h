// PretrainConfig: the `pretrain.*` keys of a `linear-ard pretrain` run, which trains a LLaMA-family
// model from random initialisation with the restore trainer's machinery (docs/pretrain.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "linear_ard/train/config_names.h"

namespace linear_ard::train {

// `pretrain.save_dtype`: dtype of the written model.safetensors.
enum class SaveDtype { kFp32, kBf16 };
template <>
struct NameTable<SaveDtype> {
  static constexpr std::pair<SaveDtype, const char*> entries[] = {{SaveDtype::kFp32, "fp32"}, {SaveDtype::kBf16, "bf16"}};
};

struct PretrainConfig {
  // The new model's config.json keys (a map: hidden_size, intermediate_size, num_hidden_layers,
  // num_attention_heads, max_position_embeddings, ...), or the path of a config.json. Null: not a
  // pretraining run.
  nlohmann::json model;
  std::string tokenizer;           // folder holding the tokenizer (e.g. `linear-ard tokenizer-train`'s)
  double init_std = 0.02;          // normal(0, init_std) for every matrix, as HF's initializer_range
  double passkey_fraction = 0.0;   // share of training blocks that end with a passkey-retrieval sample
  double answer_weight = 1.0;      // LM-loss weight of a sample's answer tokens (" KEY." EOS); others 1
  SaveDtype save_dtype = SaveDtype::kFp32;

  bool enabled() const { return !model.is_null(); }
};

}  // namespace linear_ard::train
