// Raw-pointer entry points of the train layer's CUDA kernels (no libtorch here, so nvcc compiles
// them without torch's headers). The torch glue is in src/train/fused_adamw.cpp.
#pragma once

#include <cstdint>

namespace linear_ard::train::cuda {

enum class GradDtype { kBFloat16, kFloat16 };

// One fp32 parameter with its AdamW moments, its gradient in the model dtype (`numel` elements,
// contiguous) and its step count (a float32 on the device, already advanced for this update).
struct AdamwTensor {
  float* param;
  float* exp_avg;
  float* exp_avg_sq;
  const void* grad;
  const float* step;
  int64_t numel;
};

// The options of one parameter group, in fp32 as torch's fused kernel takes them, and the factor
// each gradient is multiplied by first (the clipping) when `scale_grad`.
struct AdamwHyper {
  float lr, beta1, beta2, weight_decay, eps, grad_coef;
  bool scale_grad;
};

// One AdamW update of each of `count` tensors with the arithmetic of torch's _fused_adamw_ (its
// ADAMW mode, no amsgrad, not maximize) on the gradient cast to fp32 and, when scale_grad, then
// multiplied by grad_coef in fp32: bit for bit what casting each gradient up, scaling it and calling
// _fused_adamw_ makes, without the fp32 copy. A few launches of up to kAdamwTensorsPerLaunch
// tensors each; throws std::runtime_error naming the launch's error.
void adamw_held_update(const AdamwTensor* tensors, int64_t count, GradDtype dt, const AdamwHyper& h, void* stream);

constexpr int kAdamwTensorsPerLaunch = 48;

}  // namespace linear_ard::train::cuda
