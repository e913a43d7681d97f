// safetensors_dtype: the table of every dtype the PyPI safetensors library maps onto torch.
#include "linear_ard/io/safetensors_dtype.h"

#include <iterator>

namespace linear_ard::io {

namespace {

// `order` follows the Dtype enum of the reference (Rust) implementation, which sorts tensors by
// descending order then by name when it writes; using the same order makes our files
// byte-identical to safetensors.torch.save_file and keeps every tensor naturally aligned.
const SafetensorsDtype safetensors_dtypes[] = {
    {"BOOL", c10::ScalarType::Bool, 0},
    {"U8", c10::ScalarType::Byte, 4},
    {"I8", c10::ScalarType::Char, 5},
    {"F8_E5M2", c10::ScalarType::Float8_e5m2, 6},
    {"F8_E4M3", c10::ScalarType::Float8_e4m3fn, 7},
    {"F8_E4M3FNUZ", c10::ScalarType::Float8_e4m3fnuz, 8},
    {"F8_E5M2FNUZ", c10::ScalarType::Float8_e5m2fnuz, 9},
    {"I16", c10::ScalarType::Short, 11},
    {"U16", c10::ScalarType::UInt16, 12},
    {"F16", c10::ScalarType::Half, 13},
    {"BF16", c10::ScalarType::BFloat16, 14},
    {"I32", c10::ScalarType::Int, 15},
    {"U32", c10::ScalarType::UInt32, 16},
    {"F32", c10::ScalarType::Float, 17},
    {"C64", c10::ScalarType::ComplexFloat, 18},
    {"F64", c10::ScalarType::Double, 19},
    {"I64", c10::ScalarType::Long, 20},
    {"U64", c10::ScalarType::UInt64, 21},
};

}  // namespace

const SafetensorsDtype* safetensors_dtype_find(const std::string& name) {
  for (const auto& d : safetensors_dtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const SafetensorsDtype* safetensors_dtype_of(c10::ScalarType type) {
  for (const auto& d : safetensors_dtypes) {
    if (type == d.type) return &d;
  }
  return nullptr;
}

}  // namespace linear_ard::io
