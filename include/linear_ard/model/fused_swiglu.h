// SwiGLU's silu(gate) * up over one gate|up GEMM output, as one CUDA kernel forward and one
// backward (src/model/cuda/swiglu.cu) instead of the composite's split, silu, multiply and their
// gradients' concatenation.
#pragma once

#include <torch/torch.h>

namespace linear_ard::model {

// Whether swiglu_fused takes `gate_up` [..., 2 f]: a build with the CUDA kernels, a contiguous
// CUDA tensor in fp32 / bf16 / fp16.
bool swiglu_fused_supported(const torch::Tensor& gate_up);

// silu(gate_up[..., :f]) * gate_up[..., f:] with each step rounded as torch's ops round it; the
// gradient is torch's to the rounding of silu_backward's last expression (FMA contraction may
// differ by one unit in the last place of fp32 before the final rounding).
torch::Tensor swiglu_fused(const torch::Tensor& gate_up);

}  // namespace linear_ard::model
