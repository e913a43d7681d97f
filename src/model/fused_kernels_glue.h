// What the model layer's fused-kernel glue shares: the kernels' dtype tag of a tensor and the
// current CUDA stream, both only in a build with the kernels (LINEAR_ARD_MODEL_CUDA).
#pragma once

#include <optional>

#include <torch/torch.h>

#ifdef LINEAR_ARD_MODEL_CUDA
#include "cuda/model_kernels.h"

namespace linear_ard::model {

// The kernels' tag for t's dtype; nullopt for a dtype they do not take.
std::optional<cuda::Dtype> fused_dtype(const torch::Tensor& t);

// False when the environment sets LINEAR_ARD_NO_FUSED_KERNELS=1 (read once): the composite torch
// ops run instead, for timing one against the other in one build and for ruling the kernels out.
bool fused_enabled();

// The current CUDA stream of t's device, as the kernels' launch takes it.
void* fused_stream(const torch::Tensor& t);

}  // namespace linear_ard::model
#endif
