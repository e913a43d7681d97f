// hf_folder: load and atomically save HuggingFace model folders.
#include "linear_ard/io/hf_folder.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <system_error>

#include "linear_ard/io/file_atomic.h"
#include "linear_ard/io/hf_config.h"
#include "linear_ard/io/json_file.h"

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
  hf_weights_save(dir.string(), folder.weights, options.max_shard_bytes);
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

}  // namespace

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
  if (load_weights) folder.weights = hf_weights_load(dir.string());
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
