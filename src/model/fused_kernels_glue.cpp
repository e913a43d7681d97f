// The model layer's fused-kernel glue helpers (fused_kernels_glue.h).
#include "fused_kernels_glue.h"

#ifdef LINEAR_ARD_MODEL_CUDA
#include <ATen/cuda/CUDAContext.h>

#include <cstdlib>
#include <cstring>

namespace linear_ard::model {

std::optional<cuda::Dtype> fused_dtype(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat: return cuda::Dtype::kFloat32;
    case torch::kBFloat16: return cuda::Dtype::kBFloat16;
    case torch::kHalf: return cuda::Dtype::kFloat16;
    default: return std::nullopt;
  }
}

bool fused_enabled() {
  static const bool enabled = [] {
    const char* off = std::getenv("LINEAR_ARD_NO_FUSED_KERNELS");
    return off == nullptr || std::strcmp(off, "1") != 0;
  }();
  return enabled;
}

void* fused_stream(const torch::Tensor& t) {
  return at::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

}  // namespace linear_ard::model
#endif
