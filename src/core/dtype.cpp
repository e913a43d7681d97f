// DType names, sizes and row loads into fp32/fp64 working buffers.
#include <stdexcept>
#include <string>

#include "linear_ard/core/dtype_load.h"
#include "linear_ard/core/float16.h"
#include "linear_ard/core/relation_kl.h"

namespace linear_ard {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "float32";
    case DType::kBF16: return "bfloat16";
    case DType::kF16: return "float16";
    case DType::kF64: return "float64";
  }
  return "unknown";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kF64: return 8;
  }
  throw std::invalid_argument("dtype_size: unknown dtype " + std::to_string(int(dtype)));
}

namespace {

template <typename Out>
void load_row(DType dtype, const void* base, int64_t offset, int64_t count, Out* dst) {
  switch (dtype) {
    case DType::kF32: {
      const float* src = static_cast<const float*>(base) + offset;
      for (int64_t k = 0; k < count; ++k) dst[k] = Out(src[k]);
      return;
    }
    case DType::kBF16: {
      const uint16_t* src = static_cast<const uint16_t*>(base) + offset;
      for (int64_t k = 0; k < count; ++k) dst[k] = Out(bf16_to_float(src[k]));
      return;
    }
    case DType::kF16: {
      const uint16_t* src = static_cast<const uint16_t*>(base) + offset;
      for (int64_t k = 0; k < count; ++k) dst[k] = Out(fp16_to_float(src[k]));
      return;
    }
    case DType::kF64: {
      const double* src = static_cast<const double*>(base) + offset;
      for (int64_t k = 0; k < count; ++k) dst[k] = Out(src[k]);
      return;
    }
  }
  throw std::invalid_argument("dtype_load_row: unknown dtype " + std::to_string(int(dtype)));
}

}  // namespace

void dtype_load_row(DType dtype, const void* base, int64_t offset, int64_t count, float* dst) {
  load_row(dtype, base, offset, count, dst);
}

void dtype_load_row(DType dtype, const void* base, int64_t offset, int64_t count, double* dst) {
  load_row(dtype, base, offset, count, dst);
}

}  // namespace linear_ard
