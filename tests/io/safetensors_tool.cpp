// safetensors_tool: the bridge the Python tests use to drive the C++ io layer.
//   safetensors_tool summary <file.safetensors | folder>   JSON: metadata, dtype/shape/crc32 per tensor
//   safetensors_tool copy <in.safetensors> <out.safetensors>           read then write, metadata kept
//   safetensors_tool reshard <in folder> <out folder> <max_shard_bytes>  model weights only
//   safetensors_tool hf-copy <in folder> <out folder> <max_shard_bytes>  whole HF folder
// Errors go to stderr with exit status 1.
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "linear_ard/io/hf_weights.h"
#include "linear_ard/io/hf_folder.h"
#include "linear_ard/io/safetensors.h"
#include "linear_ard/io/safetensors_dtype.h"

using namespace linear_ard::io;

namespace {

// zlib's CRC-32, so Python can check tensor bytes with zlib.crc32.
uint32_t crc32_bytes(const uint8_t* data, size_t n) {
  static uint32_t table[256] = {};
  if (table[1] == 0) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
  }
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

nlohmann::json tensors_summary(const TensorMap& tensors) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, tensor] : tensors) {
    const torch::Tensor t = tensor.contiguous();
    out[name] = {{"dtype", safetensors_dtype_of(t.scalar_type())->name},
                 {"shape", t.sizes().vec()},
                 {"crc32", crc32_bytes(static_cast<const uint8_t*>(t.data_ptr()), t.nbytes())}};
  }
  return out;
}

int tool_run(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "summary" && argc == 3) {
    nlohmann::json out;
    if (std::filesystem::is_directory(argv[2])) {
      out["tensors"] = tensors_summary(hf_weights_load(argv[2]));
    } else {
      std::map<std::string, std::string> metadata;
      out["tensors"] = tensors_summary(safetensors_load(argv[2], &metadata));
      out["metadata"] = metadata;
    }
    std::cout << out.dump() << "\n";
    return 0;
  }
  if (command == "copy" && argc == 4) {
    std::map<std::string, std::string> metadata;
    const TensorMap tensors = safetensors_load(argv[2], &metadata);
    safetensors_save(argv[3], tensors, metadata);
    return 0;
  }
  if (command == "reshard" && argc == 5) {
    hf_weights_save(argv[3], hf_weights_load(argv[2]), std::stoll(argv[4]));
    return 0;
  }
  if (command == "hf-copy" && argc == 5) {
    HfFolderSaveOptions options;
    options.max_shard_bytes = std::stoll(argv[4]);
    hf_folder_save(argv[3], hf_folder_load(argv[2]), options);
    return 0;
  }
  std::cerr << "usage: safetensors_tool summary PATH | copy IN OUT | reshard IN OUT BYTES | hf-copy IN OUT BYTES\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return tool_run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
