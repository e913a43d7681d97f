// safetensors_save: write tensors in the layout safetensors.torch.save_file produces.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "linear_ard/io/file_atomic.h"
#include "linear_ard/io/safetensors.h"
#include "linear_ard/io/safetensors_dtype.h"

namespace linear_ard::io {

namespace {

[[noreturn]] void safetensors_save_fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors file " + path + ": " + what);
}

struct SaveItem {
  const std::string* name;
  const SafetensorsDtype* dtype;
  torch::Tensor data;  // CPU, contiguous
};

}  // namespace

void safetensors_save(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<SaveItem> items;
  items.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") safetensors_save_fail(path, "tensor name '__metadata__' is reserved");
    if (!tensor.defined()) safetensors_save_fail(path, "tensor '" + name + "' is undefined");
    const SafetensorsDtype* dtype = safetensors_dtype_of(tensor.scalar_type());
    if (dtype == nullptr) {
      safetensors_save_fail(path, "tensor '" + name + "': dtype " + std::string(c10::toString(tensor.scalar_type())) +
                                 " has no safetensors equivalent");
    }
    items.push_back({&name, dtype, tensor.detach().to(torch::kCPU).contiguous()});
  }
  std::stable_sort(items.begin(), items.end(), [](const SaveItem& a, const SaveItem& b) {
    return a.dtype->order > b.dtype->order;  // names are already sorted (std::map)
  });

  // ordered_json: `__metadata__` first and fields in dtype/shape/data_offsets order, as the
  // reference writer emits them, so identical inputs give identical bytes.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& item : items) {
    const uint64_t nbytes = item.data.nbytes();
    header[*item.name] = {{"dtype", item.dtype->name},
                          {"shape", item.data.sizes().vec()},
                          {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::type_error& e) {
    safetensors_save_fail(path, std::string("a tensor name or metadata entry is not valid UTF-8: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  file_write_atomic(path, [&](std::FILE* f) {
    uint8_t size_le[8];
    for (int i = 0; i < 8; ++i) size_le[i] = static_cast<uint8_t>(uint64_t(text.size()) >> (8 * i));
    bool ok = std::fwrite(size_le, 1, 8, f) == 8 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    for (const auto& item : items) {
      if (!ok) break;
      const size_t nbytes = item.data.nbytes();
      ok = nbytes == 0 || std::fwrite(item.data.data_ptr(), 1, nbytes, f) == nbytes;
    }
    if (!ok) safetensors_save_fail(path, "write failed (disk full?)");
  });
}

}  // namespace linear_ard::io
