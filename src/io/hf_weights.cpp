// hf_weights: an HF folder's weights as sharded safetensors, with transformers' naming, split
// rule and index format.
#include "linear_ard/io/hf_weights.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>
#include <vector>

#include "linear_ard/io/json_file.h"

namespace linear_ard::io {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void hf_weights_fail(const std::string& where, const std::string& what) {
  throw std::runtime_error("model weights " + where + ": " + what);
}

std::string shard_name(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

}  // namespace

TensorMap hf_weights_load(const std::string& folder) {
  const fs::path dir(folder);
  const fs::path index_path = dir / hf_weights_index_name;
  if (!fs::exists(index_path)) {
    if (!fs::exists(dir / hf_weights_single_name)) {
      hf_weights_fail(folder, std::string("holds neither ") + hf_weights_single_name + " nor " + hf_weights_index_name);
    }
    return safetensors_load((dir / hf_weights_single_name).string());
  }

  const nlohmann::json index = json_file_read(index_path.string());
  const auto weight_map = index.find("weight_map");
  if (!index.is_object() || weight_map == index.end() || !weight_map->is_object()) {
    hf_weights_fail(index_path.string(), "has no 'weight_map' object");
  }
  std::map<std::string, std::vector<std::string>> names_by_shard;
  for (const auto& [name, shard] : weight_map->items()) {
    if (!shard.is_string()) hf_weights_fail(index_path.string(), "weight_map entry '" + name + "' is not a file name");
    const std::string file = shard.get<std::string>();
    // The index is data from the internet: it may only name files inside the folder.
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
      hf_weights_fail(index_path.string(), "weight_map entry '" + name + "' names '" + file + "', not a file of the folder");
    }
    names_by_shard[file].push_back(name);
  }

  // The index decides which tensor comes from which file (as in transformers); a shard's other
  // tensors are not part of the model.
  TensorMap tensors;
  for (const auto& [file, names] : names_by_shard) {
    const fs::path shard_path = dir / file;
    TensorMap shard = safetensors_load(shard_path.string());
    for (const auto& name : names) {
      auto it = shard.find(name);
      if (it == shard.end()) {
        hf_weights_fail(index_path.string(), "tensor '" + name + "' is listed in " + file + " but that shard lacks it");
      }
      tensors.emplace(name, std::move(it->second));
    }
  }
  return tensors;
}

void hf_weights_save(const std::string& folder, const TensorMap& tensors, int64_t max_shard_bytes) {
  if (max_shard_bytes <= 0) hf_weights_fail(folder, "max_shard_bytes must be positive, got " + std::to_string(max_shard_bytes));
  if (tensors.empty()) hf_weights_fail(folder, "no tensors to save");
  const fs::path dir(folder);
  fs::create_directories(dir);

  // huggingface_hub.split_torch_state_dict_into_shards, walking the tensors in key order.
  std::vector<TensorMap> shards;
  TensorMap current;
  int64_t current_bytes = 0, total_bytes = 0, total_parameters = 0;
  for (const auto& [name, tensor] : tensors) {
    const int64_t nbytes = static_cast<int64_t>(tensor.numel()) * static_cast<int64_t>(tensor.element_size());
    total_bytes += nbytes;
    total_parameters += tensor.numel();
    if (nbytes > max_shard_bytes) {
      shards.push_back({{name, tensor}});
      continue;
    }
    if (current_bytes + nbytes > max_shard_bytes) {
      shards.push_back(std::move(current));
      current = {};
      current_bytes = 0;
    }
    current.emplace(name, tensor);
    current_bytes += nbytes;
  }
  if (!current.empty()) shards.push_back(std::move(current));

  std::set<std::string> written;
  if (shards.size() == 1) {
    safetensors_save((dir / hf_weights_single_name).string(), shards.front());
    written.insert(hf_weights_single_name);
  } else {
    nlohmann::json weight_map = nlohmann::json::object();
    for (size_t i = 0; i < shards.size(); ++i) {
      const std::string name = shard_name(i, shards.size());
      safetensors_save((dir / name).string(), shards[i]);
      written.insert(name);
      for (const auto& entry : shards[i]) weight_map[entry.first] = name;
    }
    const nlohmann::json index = {
        {"metadata", {{"total_parameters", total_parameters}, {"total_size", total_bytes}}},
        {"weight_map", weight_map}};
    json_file_write((dir / hf_weights_index_name).string(), index);
    written.insert(hf_weights_index_name);
  }

  // Leftovers of an earlier save would otherwise be picked up by a loader that globs shards.
  static const std::regex weight_file(R"(model(-\d{5}-of-\d{5})?\.safetensors(\.index\.json)?)");
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && std::regex_match(name, weight_file) && written.count(name) == 0) {
      fs::remove(entry.path());
    }
  }
}

}  // namespace linear_ard::io
