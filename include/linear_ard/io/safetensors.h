// safetensors: validated, memory-mapped reader and atomic writer of single .safetensors files.
#pragma once

#include <torch/types.h>

#include <map>
#include <string>

namespace linear_ard::io {

// Tensors by name; std::map so iteration (and thus shard assignment) is deterministic.
using TensorMap = std::map<std::string, torch::Tensor>;

// The reference implementation's bound on the JSON header (bytes).
constexpr uint64_t safetensors_max_header_bytes = 100'000'000;

// Reads and validates `path` (header size, UTF-8 JSON object without duplicate keys, known
// dtypes, non-negative shapes, offsets tiling the data buffer exactly up to EOF). The returned CPU
// tensors alias a private copy-on-write mapping of the file that lives as long as any of them.
// `metadata` (if given) receives the `__metadata__` map. Throws std::runtime_error naming the
// file, the problem and, where there is one, the tensor.
TensorMap safetensors_load(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

// Writes `tensors` (moved to CPU, made contiguous) the way safetensors.torch.save_file does:
// largest dtypes first then by name, header padded with spaces to 8 bytes. Atomic: the file
// appears complete or not at all.
void safetensors_save(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace linear_ard::io
