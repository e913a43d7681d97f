// RMSNorm with HF's rounding: normalise in fp32, cast to the input dtype, then scale.
#include "linear_ard/model/rms_norm.h"

namespace linear_ard::model {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  // HF normalises in fp32 whatever the input; fp64 inputs (used only for checks, e.g. finite
  // differences of the training objective) keep fp64 so that no fp32 rounding hides in them.
  const auto compute = x.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  auto xc = x.to(compute);
  auto variance = xc.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (xc * torch::rsqrt(variance + eps)).to(x.scalar_type());
}

}  // namespace linear_ard::model
