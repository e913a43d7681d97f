// RMSNorm as LLaMA uses it: variance in fp32, normalised value cast back before the weight.
#pragma once

#include <torch/torch.h>

namespace linear_ard::model {

// weight * (x / sqrt(mean(x^2) + eps)), the statistic in fp32 whatever x's dtype (HF LlamaRMSNorm),
// except fp64 inputs, which keep fp64 (checks only).
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

}  // namespace linear_ard::model
