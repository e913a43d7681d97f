// RMSNorm with HF's rounding: normalise in fp32, cast to the input dtype, then scale.
#include "linear_ard/model/rms_norm.h"

namespace linear_ard::model {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  auto x32 = x.to(torch::kFloat);
  auto variance = x32.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (x32 * torch::rsqrt(variance + eps)).to(x.scalar_type());
}

}  // namespace linear_ard::model
