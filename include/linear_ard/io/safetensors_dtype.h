// safetensors_dtype: the safetensors dtype strings and the torch scalar types they name.
#pragma once

#include <torch/types.h>

#include <string>

namespace linear_ard::io {

struct SafetensorsDtype {
  const char* name;          // as written in the header: "F32", "BF16", "F8_E4M3", ...
  c10::ScalarType type;      // the torch type with the same bits
  int order;                 // the reference writer's enum position: files list larger ones first
};

// nullptr when the string is not a dtype this reader knows.
const SafetensorsDtype* safetensors_dtype_find(const std::string& name);

// nullptr when the torch type has no safetensors equivalent (e.g. quantized types).
const SafetensorsDtype* safetensors_dtype_of(c10::ScalarType type);

}  // namespace linear_ard::io
