// The torch side of the residual add fused into RMSNorm: checks, outputs, and the autograd rule
// whose backward is the kernel's gradient (src/model/cuda/add_rms_norm.cu).
#include "linear_ard/model/fused_add_rms_norm.h"

#include <algorithm>
#include <stdexcept>

#include "fused_kernels_glue.h"  // defines: fused_dtype, fused_enabled, fused_stream (CUDA builds)

#ifdef LINEAR_ARD_MODEL_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace linear_ard::model {
#ifdef LINEAR_ARD_MODEL_CUDA
namespace {

constexpr int64_t kMaxWidth = 8192;  // the weight gradient's fp32 row (32 KiB) in shared memory

// Saves h, the weight and the rows' rstd (fp32): backward reads no x, r or y.
class AddRmsNormFunction : public torch::autograd::Function<AddRmsNormFunction> {
 public:
  using AutogradContext = torch::autograd::AutogradContext;
  using variable_list = torch::autograd::variable_list;

  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& r,
                               const torch::Tensor& weight, double eps) {
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t width = x.size(-1), rows = x.numel() / width;
    auto h = torch::empty_like(x), y = torch::empty_like(x);
    auto rstd = torch::empty({rows}, x.options().dtype(torch::kFloat));
    cuda::add_rms_norm_forward(rows, width, static_cast<float>(eps), *fused_dtype(x), x.data_ptr(), r.data_ptr(),
                               weight.data_ptr(), h.data_ptr(), y.data_ptr(), rstd.data_ptr<float>(), fused_stream(x));
    ctx->save_for_backward({h, weight, rstd});
    return {h, y};
  }

  // grads: of h (the residual path) and of y; undefined ones arrive as zeros (materialised).
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &h = saved[0], &weight = saved[1], &rstd = saved[2];
    const c10::cuda::CUDAGuard guard(h.device());
    const int64_t width = h.size(-1), rows = h.numel() / width;
    const torch::Tensor dh = grads[0].contiguous(), dy = grads[1].contiguous();
    auto dx = torch::empty_like(h);
    torch::Tensor dw, partial;
    int64_t blocks = rows;
    if (ctx->needs_input_grad(2)) {
      // Enough blocks to fill the device; each sums its rows' weight gradient, the sum below the blocks'.
      blocks = std::min<int64_t>(rows, 8 * at::cuda::getCurrentDeviceProperties()->multiProcessorCount);
      partial = torch::empty({blocks, width}, h.options().dtype(torch::kFloat));
    }
    cuda::add_rms_norm_backward(rows, width, blocks, *fused_dtype(h), dy.data_ptr(), dh.data_ptr(), h.data_ptr(),
                                weight.data_ptr(), rstd.data_ptr<float>(), dx.data_ptr(),
                                partial.defined() ? partial.data_ptr<float>() : nullptr, fused_stream(h));
    if (partial.defined()) dw = partial.sum(0).to(weight.scalar_type());
    return {dx, dx, dw, torch::Tensor()};
  }
};

}  // namespace

bool add_rms_norm_fused_supported(const torch::Tensor& x, const torch::Tensor& r, const torch::Tensor& weight) {
  const auto same = [&](const torch::Tensor& t) {
    return t.is_cuda() && t.device() == x.device() && t.scalar_type() == x.scalar_type() && t.is_contiguous();
  };
  return fused_enabled() && x.dim() >= 1 && x.numel() > 0 && fused_dtype(x).has_value() && same(x) && same(r) &&
         same(weight) && r.sizes() == x.sizes() && weight.dim() == 1 && weight.size(0) == x.size(-1) &&
         x.size(-1) <= kMaxWidth;
}

std::pair<torch::Tensor, torch::Tensor> add_rms_norm_fused(const torch::Tensor& x, const torch::Tensor& r,
                                                           const torch::Tensor& weight, double eps) {
  if (!add_rms_norm_fused_supported(x, r, weight))
    throw std::invalid_argument("add_rms_norm_fused: x " + c10::str(x.sizes(), " ", x.scalar_type(), " on ", x.device(),
                                                                    ", r ", r.sizes(), " ", r.scalar_type(), " on ",
                                                                    r.device(), ", weight ", weight.sizes(), " ",
                                                                    weight.scalar_type()) +
                                " is not a case the fused kernel takes (add_rms_norm_fused_supported)");
  const torch::autograd::variable_list out = AddRmsNormFunction::apply(x, r, weight, eps);
  return {out[0], out[1]};
}

#else

bool add_rms_norm_fused_supported(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) { return false; }

std::pair<torch::Tensor, torch::Tensor> add_rms_norm_fused(const torch::Tensor&, const torch::Tensor&,
                                                           const torch::Tensor&, double) {
  throw std::runtime_error("add_rms_norm_fused: this build has no CUDA kernels (LINEAR_ARD_WITH_CUDA=OFF)");
}

#endif
}  // namespace linear_ard::model
