// dtype_load_row: reading a run of X/Y elements stored in any DType into an fp32 or fp64 buffer.
#pragma once

#include <cstdint>

#include "linear_ard/core/relation_kl.h"  // defines: DType

namespace linear_ard {

// dst[k] = element (offset + k) of base, for k < count; offset and count are in elements.
// bf16/fp16 widen exactly; kF64 into fp32 rounds to nearest.
void dtype_load_row(DType dtype, const void* base, int64_t offset, int64_t count, float* dst);
void dtype_load_row(DType dtype, const void* base, int64_t offset, int64_t count, double* dst);

}  // namespace linear_ard
