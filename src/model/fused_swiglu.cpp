// The torch side of the fused SwiGLU: checks, output, and the autograd rule whose backward is the
// kernel's gradient (src/model/cuda/swiglu.cu).
#include "linear_ard/model/fused_swiglu.h"

#include <stdexcept>

#include "fused_kernels_glue.h"  // defines: fused_dtype, fused_enabled, fused_stream (CUDA builds)

#ifdef LINEAR_ARD_MODEL_CUDA
#include <c10/cuda/CUDAGuard.h>
#endif

namespace linear_ard::model {
#ifdef LINEAR_ARD_MODEL_CUDA
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Saves only gate_up (the GEMM output the composite keeps too); silu is recomputed backward.
class SwigluFunction : public torch::autograd::Function<SwigluFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& gate_up) {
    const c10::cuda::CUDAGuard guard(gate_up.device());
    const int64_t f = gate_up.size(-1) / 2;
    auto sizes = gate_up.sizes().vec();
    sizes.back() = f;
    auto h = torch::empty(sizes, gate_up.options());
    cuda::swiglu_forward(gate_up.numel() / (2 * f), f, *fused_dtype(gate_up), gate_up.data_ptr(), h.data_ptr(),
                         fused_stream(gate_up));
    ctx->save_for_backward({gate_up});
    return h;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const torch::Tensor gate_up = ctx->get_saved_variables()[0];
    const c10::cuda::CUDAGuard guard(gate_up.device());
    const int64_t f = gate_up.size(-1) / 2;
    const torch::Tensor dh = grads[0].contiguous();
    auto dgate_up = torch::empty_like(gate_up);
    cuda::swiglu_backward(gate_up.numel() / (2 * f), f, *fused_dtype(gate_up), gate_up.data_ptr(), dh.data_ptr(),
                          dgate_up.data_ptr(), fused_stream(gate_up));
    return {dgate_up};
  }
};

}  // namespace

bool swiglu_fused_supported(const torch::Tensor& gate_up) {
  return fused_enabled() && gate_up.is_cuda() && gate_up.dim() >= 1 && gate_up.is_contiguous() && gate_up.size(-1) % 2 == 0 &&
         gate_up.numel() > 0 && fused_dtype(gate_up).has_value();
}

torch::Tensor swiglu_fused(const torch::Tensor& gate_up) {
  if (!swiglu_fused_supported(gate_up))
    throw std::invalid_argument("swiglu_fused: gate_up " + c10::str(gate_up.sizes(), " ", gate_up.scalar_type(),
                                " on ", gate_up.device()) +
                                " is not a case the fused kernel takes (swiglu_fused_supported)");
  return SwigluFunction::apply(gate_up);
}

#else

bool swiglu_fused_supported(const torch::Tensor&) { return false; }

torch::Tensor swiglu_fused(const torch::Tensor&) {
  throw std::runtime_error("swiglu_fused: this build has no CUDA kernels (LINEAR_ARD_WITH_CUDA=OFF)");
}

#endif
}  // namespace linear_ard::model
