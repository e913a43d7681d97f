// hf_folder: load, check and atomically save HuggingFace model folders.
#include "linear_ard/io/hf_folder.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <system_error>

#include "linear_ard/io/file_atomic.h"
#include "linear_ard/io/hf_config.h"
#include "linear_ard/io/hf_fused.h"  // defines: hf_fused_split, hf_fused_join, hf_fused_name
#include "linear_ard/io/json_file.h"
#include "linear_ard/model/llama_weights.h"  // defines: llama_weights_mismatch
#include "linear_ard/model/memory_fit.h"     // defines: memory_bytes_text, model_config_sizes_text

namespace linear_ard::io {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void hf_folder_fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("HF folder " + path + ": " + what);
}

constexpr const char* config_name = "config.json";
constexpr const char* generation_config_name = "generation_config.json";

// "out/" and "out" must name the same folder, or the temporary sibling lands inside it.
fs::path folder_normal(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

// transformers' name of the floating dtype holding most of `weights`' elements (what
// save_pretrained writes as `dtype`: the model's dtype), or "" when none is floating.
std::string weights_dtype_name(const TensorMap& weights) {
  std::map<c10::ScalarType, int64_t> elements;
  for (const auto& [name, t] : weights)
    if (t.is_floating_point()) elements[t.scalar_type()] += t.numel();
  const auto most = std::max_element(elements.begin(), elements.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == elements.end()) return "";
  switch (most->first) {
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    default: return "";
  }
}

void folder_write_contents(const fs::path& dir, const HfFolder& folder, const HfFolderSaveOptions& options) {
  // config.json states the dtype of the weights written here, whatever the source folder said.
  model::ModelConfig config = folder.model_config;
  config.torch_dtype = weights_dtype_name(folder.weights);
  json_file_write((dir / config_name).string(), hf_config_to_json(config, folder.config));
  if (folder.generation_config) json_file_write((dir / generation_config_name).string(), *folder.generation_config);
  for (const auto& [name, source] : folder.tokenizer_files) {
    fs::copy_file(source, dir / name);
  }
  hf_weights_save(dir.string(), hf_fused_join(config, folder.weights), options.max_shard_bytes);
}

// Puts the finished `tmp` folder at `dir`; an existing one is moved aside first and deleted
// only after the new one is in place.
void folder_swap_in(const fs::path& tmp, const fs::path& dir) {
  if (!fs::exists(dir)) {
    fs::rename(tmp, dir);
    return;
  }
  if (fs::is_empty(dir)) {
    fs::remove(dir);
    fs::rename(tmp, dir);
    return;
  }
  const fs::path old = dir.string() + ".old." + std::to_string(::getpid());
  fs::rename(dir, old);
  fs::rename(tmp, dir);
  fs::remove_all(old);
}

// The file of `folder`'s weights that holds `tensor` (the index's entry when sharded), or that
// should: model.safetensors, or the index.
std::string weights_file_of(const HfFolder& folder, const std::string& tensor) {
  const fs::path index = fs::path(folder.path) / hf_weights_index_name;
  if (!fs::exists(index)) return hf_weights_single_name;
  const nlohmann::json map = json_file_read(index.string()).value("weight_map", nlohmann::json::object());
  const auto it = map.find(tensor);
  return it != map.end() && it->is_string() ? it->get<std::string>() : std::string(hf_weights_index_name);
}

std::string count_text(double n) {
  char text[32];
  std::snprintf(text, sizeof text, n < 1e15 ? "%.0f" : "%.3g", n);
  return text;
}

}  // namespace

void hf_folder_weights_check(const HfFolder& folder) {
  const model::ModelConfig& c = folder.model_config;
  const auto mismatch = model::llama_weights_mismatch(c, folder.weights);
  double stored = 0;
  for (const auto& [name, t] : folder.weights) stored += static_cast<double>(t.numel());
  const double implied = model::model_config_param_count(c);
  if (!mismatch && implied <= stored) return;
  // The sizes and both totals go with any disagreement: they say which key is off and by how much.
  const auto dtype = folder.weights.empty() ? torch::kBFloat16 : folder.weights.begin()->second.scalar_type();
  const std::string files = fs::exists(fs::path(folder.path) / hf_weights_index_name)
                                ? std::string(hf_weights_index_name) + " and its shards hold "
                                : std::string(hf_weights_single_name) + " holds ";
  std::string where;
  if (mismatch) {
    // A part of a fused tensor (Phi-3's q_proj rows of qkv_proj) is named as the files hold it.
    const std::string& part = mismatch->tensor;
    const std::string stored_name = hf_fused_name(c, part);
    std::string message = mismatch->message;
    if (stored_name != part)
      message.replace(message.find(part), part.size(), stored_name + " (its rows read as " + part + ")");
    where = weights_file_of(folder, stored_name) + ": " + message + "; ";
  }
  hf_folder_fail(folder.path, where +
                                  config_name + " (" + model::model_config_sizes_text(c) + ") gives " +
                                  count_text(implied) + " parameters (" +
                                  model::memory_bytes_text(implied * static_cast<double>(c10::elementSize(dtype))) +
                                  " in " + c10::toString(dtype) + "), " + files + count_text(stored));
}

void hf_folder_tokenizer_check(const HfFolder& folder, const Tokenizer& tokenizer, const std::string& tokenizer_file) {
  constexpr const char* embedding = "model.embed_tokens.weight";
  const auto it = folder.weights.find(embedding);
  const int64_t rows = it != folder.weights.end() ? it->second.size(0) : folder.model_config.vocab_size;
  if (tokenizer.vocab_size() <= rows) return;
  hf_folder_fail(folder.path, tokenizer_file + " has " + std::to_string(tokenizer.vocab_size()) +
                                  " ids (added tokens included) but the embedding " + embedding + " in " +
                                  weights_file_of(folder, embedding) + " has " + std::to_string(rows) +
                                  " rows (" + config_name + " vocab_size " +
                                  std::to_string(folder.model_config.vocab_size) +
                                  "): the ids from " + std::to_string(rows) + " up have no embedding");
}

HfFolder hf_folder_load(const std::string& path, bool load_weights) {
  const fs::path dir = folder_normal(path);
  if (!fs::is_directory(dir)) hf_folder_fail(path, "not a directory");
  HfFolder folder;
  folder.path = dir.string();
  if (!fs::exists(dir / config_name)) hf_folder_fail(path, std::string("has no ") + config_name);
  folder.config = json_file_read((dir / config_name).string());
  if (!folder.config.is_object()) hf_folder_fail(path, std::string(config_name) + " is not a JSON object");
  try {
    folder.model_config = hf_config_from_json(folder.config);
  } catch (const std::exception& e) {
    hf_folder_fail(path, e.what());
  }
  if (fs::exists(dir / generation_config_name)) {
    folder.generation_config = json_file_read((dir / generation_config_name).string());
  }
  for (const char* name : hf_tokenizer_file_names) {
    if (fs::is_regular_file(dir / name)) folder.tokenizer_files[name] = (dir / name).string();
  }
  if (load_weights) {
    folder.weights = hf_weights_load(dir.string());
    try {
      hf_fused_split(folder.model_config, folder.weights);
    } catch (const std::runtime_error& e) {
      hf_folder_fail(path, e.what());
    }
  }
  return folder;
}

void hf_folder_save(const std::string& path, const HfFolder& folder, const HfFolderSaveOptions& options) {
  const fs::path dir = folder_normal(path);
  if (folder.weights.empty()) hf_folder_fail(path, "no weights to save");
  if (fs::exists(dir)) {
    if (!fs::is_directory(dir)) hf_folder_fail(path, "exists and is not a directory");
    if (!fs::is_empty(dir) && !options.overwrite) {
      hf_folder_fail(path, "exists and is not empty (pass overwrite to replace it)");
    }
  }
  const fs::path tmp = file_tmp_name(dir.string());
  try {
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    folder_write_contents(tmp, folder, options);
    folder_swap_in(tmp, dir);
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    hf_folder_fail(path, std::string("save failed: ") + e.what());
  }
}

}  // namespace linear_ard::io
