// pretrain_init: config.json from the `pretrain.model` shape, random HF-style weights, tokenizer files.
#include "linear_ard/train/pretrain_init.h"

#include <filesystem>
#include <stdexcept>

#include "linear_ard/io/hf_config.h"         // defines: hf_config_from_json
#include "linear_ard/io/json_file.h"         // defines: json_file_read
#include "linear_ard/model/llama_weights.h"  // defines: llama_weights_random

namespace linear_ard::train {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string key = "config key 'pretrain.model'";

}  // namespace

io::HfFolder pretrain_folder_config(const PretrainConfig& p, const io::Tokenizer& tokenizer) {
  json j;
  if (p.model.is_string()) {
    const std::string path = p.model.get<std::string>();
    if (!fs::is_regular_file(path)) throw std::invalid_argument(key + ": file " + path + " does not exist");
    j = io::json_file_read(path);
  } else {
    j = p.model;
  }
  if (!j.is_object()) throw std::invalid_argument(key + " must be a map of config.json keys or a config.json path");
  for (const char* k : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                        "max_position_embeddings"})
    if (!j.contains(k) || !j[k].is_number_integer() || j[k].get<int64_t>() < 1)
      throw std::invalid_argument("config key 'pretrain.model." + std::string(k) + "' is required (a positive integer)");
  const int64_t vocab = tokenizer.vocab_size();
  if (!j.contains("vocab_size")) j["vocab_size"] = vocab;
  if (!j["vocab_size"].is_number_integer() || j["vocab_size"].get<int64_t>() < vocab)
    throw std::invalid_argument("config key 'pretrain.model.vocab_size' must be an integer >= the tokenizer's " +
                                std::to_string(vocab) + " ids");
  const auto fill = [&](const char* k, const json& v) {
    if (!j.contains(k)) j[k] = v;
  };
  fill("architectures", {"LlamaForCausalLM"});
  fill("model_type", "llama");
  fill("hidden_act", "silu");
  fill("num_key_value_heads", j["num_attention_heads"]);
  fill("rms_norm_eps", 1e-6);
  fill("rope_theta", 10000.0);
  fill("tie_word_embeddings", false);
  fill("attention_bias", false);
  if (tokenizer.bos_id() >= 0) fill("bos_token_id", tokenizer.bos_id());
  if (tokenizer.eos_id() >= 0) fill("eos_token_id", tokenizer.eos_id());
  j["initializer_range"] = p.init_std;
  const bool bf16 = p.save_dtype == SaveDtype::kBf16;
  j["torch_dtype"] = bf16 ? "bfloat16" : "float32";

  io::HfFolder folder;
  folder.config = j;
  try {
    folder.model_config = io::hf_config_from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(key + ": " + e.what());
  }
  for (const char* name : io::hf_tokenizer_file_names) {
    const fs::path f = fs::path(p.tokenizer) / name;
    if (fs::is_regular_file(f)) folder.tokenizer_files[name] = f.string();
  }
  return folder;
}

void pretrain_folder_weights(io::HfFolder& folder, const PretrainConfig& p, uint64_t seed) {
  const bool bf16 = p.save_dtype == SaveDtype::kBf16;
  model::LlamaWeights w;
  try {  // refuses a shape whose parameters cannot fit in memory, before drawing any
    w = model::llama_weights_random(folder.model_config, bf16 ? torch::kBFloat16 : torch::kFloat, torch::kCPU, seed,
                                    p.init_std);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(key + ": " + e.what());
  }
  // HF zero-initialises biases; llama_weights_random draws them like matrices.
  for (auto& [name, t] : w.tensors)
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) t.zero_();
  folder.weights = std::move(w.tensors);
}

}  // namespace linear_ard::train
