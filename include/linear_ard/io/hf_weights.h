// hf_weights: the weights of a HuggingFace folder, one model.safetensors or shards listed in
// model.safetensors.index.json.
#pragma once

#include <cstdint>
#include <string>

#include "linear_ard/io/safetensors.h"

namespace linear_ard::io {

constexpr const char* hf_weights_single_name = "model.safetensors";
constexpr const char* hf_weights_index_name = "model.safetensors.index.json";
// transformers' default max_shard_size ("5GB").
constexpr int64_t hf_weights_default_shard_bytes = 5'000'000'000;

// Every tensor of `folder`: through the index's weight_map when there is one (each listed tensor
// must be in its shard), else from model.safetensors. Tensors alias the mapped files.
TensorMap hf_weights_load(const std::string& folder);

// Splits `tensors` into shards exactly as transformers' save_pretrained(max_shard_size=...) does
// (in key order, a new shard when the next tensor would pass the limit, an oversized tensor alone),
// writes model-0000i-of-0000N.safetensors plus the index, or a single model.safetensors when one
// shard suffices, then removes weight files of an earlier save that the new one does not use.
void hf_weights_save(const std::string& folder, const TensorMap& tensors, int64_t max_shard_bytes);

}  // namespace linear_ard::io
