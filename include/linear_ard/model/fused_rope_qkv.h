// The q/k/v split of one QKV GEMM's output with RoPE on q and k, as one CUDA kernel forward and one
// backward (src/model/cuda/rope_qkv.cu) instead of the composite's split, multiplies, roll and add.
#pragma once

#include <tuple>

#include <torch/torch.h>

#include "linear_ard/model/rope.h"

namespace linear_ard::model {

// Whether rope_qkv_fused takes `qkv` [B, n, (H + 2 Hkv) d]: a build with the CUDA kernels, a
// contiguous CUDA tensor in fp32 / bf16 / fp16, cos / sin_signed of its dtype and device.
bool rope_qkv_fused_supported(const torch::Tensor& qkv, const RopeCosSin& rope);

// q [B, H, n, d], k and v [B, Hkv, n, d] (views of [B, n, heads, d] storage, the layout the
// composite's split of the GEMM output has), q and k rotated on their first rotary_dim features:
// bit for bit what rope_apply gives on CUDA, and so is the gradient (autograd through a Function).
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> rope_qkv_fused(const torch::Tensor& qkv,
                                                                       const RopeCosSin& rope, int64_t heads,
                                                                       int64_t kv_heads, int64_t head_dim);

}  // namespace linear_ard::model
