// The residual add fused into RMSNorm, h = x + r and y = rms_norm(h) * weight, as one CUDA kernel
// forward and one backward (src/model/cuda/add_rms_norm.cu) instead of the composite's add, norm
// and, backward, the norm's gradient, the residual gradient's add and the weight gradient's sum.
#pragma once

#include <utility>

#include <torch/torch.h>

namespace linear_ard::model {

// Whether add_rms_norm_fused takes (x, r, weight): a build with the CUDA kernels (not turned off by
// LINEAR_ARD_NO_FUSED_KERNELS=1), contiguous non-empty CUDA tensors of one dtype (fp32 / bf16 /
// fp16) on one device, r of x's shape, weight [x.size(-1)] with x.size(-1) <= 8192 (the weight
// gradient's shared memory).
bool add_rms_norm_fused_supported(const torch::Tensor& x, const torch::Tensor& r, const torch::Tensor& weight);

// {h, y}: h = x + r rounded to their dtype, y = weight * h * rsqrt(mean(h^2) + eps) computed in fp32
// and rounded once; differentiable in x, r and weight, gradients computed in fp32. Not bit for bit
// at::rms_norm: within FlashAttention's rule against fp64 (tests/model/fused_kernels_check).
std::pair<torch::Tensor, torch::Tensor> add_rms_norm_fused(const torch::Tensor& x, const torch::Tensor& r,
                                                           const torch::Tensor& weight, double eps);

}  // namespace linear_ard::model
