// hf_folder: a HuggingFace model folder (config, generation config, tokenizer files, weights)
// loaded as one value and saved atomically in the layout transformers writes.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "linear_ard/io/hf_weights.h"
#include "linear_ard/io/safetensors.h"
#include "linear_ard/model/model_config.h"

namespace linear_ard::io {

// Files a tokenizer may need; whichever exist are carried from the loaded folder to the saved one.
constexpr const char* hf_tokenizer_file_names[] = {
    "tokenizer.json",  "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
    "added_tokens.json", "vocab.json",          "merges.txt",      "chat_template.jinja",
};

struct HfFolder {
  std::string path;                                     // folder it was loaded from; empty if built
  nlohmann::json config;                                // config.json as read
  model::ModelConfig model_config;                      // typed view; what hf_folder_save writes
  std::optional<nlohmann::json> generation_config;      // generation_config.json, when present
  std::map<std::string, std::string> tokenizer_files;   // file name -> path of the existing file
  TensorMap weights;                                    // empty unless loaded or set
};

// Reads `path`: config.json (required; model_config = hf_config_from_json of it),
// generation_config.json and tokenizer files (optional), and the weights
// (hf_weights_load) when `load_weights`. Throws naming the file at fault.
HfFolder hf_folder_load(const std::string& path, bool load_weights = true);

struct HfFolderSaveOptions {
  int64_t max_shard_bytes = hf_weights_default_shard_bytes;
  bool overwrite = false;  // replace an existing non-empty folder
};

// Builds the folder in `<path>.tmp.<pid>` and renames it into place, so `path` is never seen half
// written: config.json = hf_config_to_json(model_config, config) with `dtype` the floating dtype
// holding most of the weights' elements (so edits to the typed config such as a new rope_scaling
// win, unmodelled keys survive, and the dtype is the written weights'), generation_config.json,
// copies of the tokenizer files, sharded weights. Refuses a non-empty existing `path` unless
// options.overwrite, and a folder without weights.
void hf_folder_save(const std::string& path, const HfFolder& folder, const HfFolderSaveOptions& options = {});

}  // namespace linear_ard::io
