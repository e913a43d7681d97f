// RMSNorm as LLaMA uses it: variance in fp32, normalised value cast back before the weight; and
// the residual add before it.
#pragma once

#include <utility>

#include <torch/torch.h>

namespace linear_ard::model {

// weight * (x / sqrt(mean(x^2) + eps)), the statistic in fp32 whatever x's dtype (HF LlamaRMSNorm),
// except fp64 inputs, which keep fp64 (checks only).
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// {h, rms_norm(h, weight, eps)} with h = x + r, the pre-norm residual stream: one fused kernel each
// way where add_rms_norm_fused takes the tensors (CUDA), else the add and rms_norm above.
std::pair<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& r,
                                                     const torch::Tensor& weight, double eps);

}  // namespace linear_ard::model
