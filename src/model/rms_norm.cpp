// RMSNorm with HF's rounding: normalise in fp32, cast to the input dtype, then scale; and the residual
// add before it, fused with it on CUDA.
#include "linear_ard/model/rms_norm.h"

#include "linear_ard/model/fused_add_rms_norm.h"  // defines: add_rms_norm_fused(_supported)

namespace linear_ard::model {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  // at::rms_norm is HF's formula op for op where torch has no fused kernel (CPU): normalise in the
  // op-math type (fp32 for 16-bit and fp32 inputs, fp64 for fp64 ones, which keep fp64 so that no
  // fp32 rounding hides in the checks that use them), cast to x's dtype, then scale. On CUDA it is
  // one fused forward kernel and one fused backward kernel instead of about ten elementwise ones.
  return at::rms_norm(x, {x.size(-1)}, weight, eps);
}

std::pair<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& r,
                                                     const torch::Tensor& weight, double eps) {
  if (add_rms_norm_fused_supported(x, r, weight)) return add_rms_norm_fused(x, r, weight, eps);
  torch::Tensor h = x + r;
  return {h, rms_norm(h, weight, eps)};
}

}  // namespace linear_ard::model
