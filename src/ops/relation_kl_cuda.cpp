// CUDA kernels of relation_kl and relation_kl_backward: validate, allocate the outputs through the
// caching allocator, run the core's CUDA entry points on the current stream. Built when
// LINEAR_ARD_WITH_CUDA is ON (src/ops/CMakeLists.txt).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "relation_kl_inputs.h"  // defines: relation_kl_inputs_make, relation_kl_*_prepare

namespace linear_ard::ops {
namespace {

void* current_stream() { return at::cuda::getCurrentCUDAStream().stream(); }

std::tuple<at::Tensor, at::Tensor, at::Tensor> relation_kl_cuda_kernel(
    const at::Tensor& x_s, const std::optional<at::Tensor>& y_s, const at::Tensor& x_t,
    const std::optional<at::Tensor>& y_t, const std::optional<at::Tensor>& key_mask, bool causal,
    std::optional<double> scale_s, std::optional<double> scale_t, bool /*deterministic: the forward always is*/) {
  const RelationKLInputs in =
      relation_kl_inputs_make(x_s, y_s, x_t, y_t, key_mask, causal, scale_s, scale_t);
  // Allocation and the launch go to x_s's GPU, whichever GPU is current.
  const c10::cuda::CUDAGuard device_guard(in.x_s.device());
  RelationKLForward fwd = relation_kl_forward_prepare(in);
  fwd.params.stream = current_stream();
  relation_kl_core_run(&relation_kl_forward_cuda, fwd.params);
  return {fwd.kl, fwd.lse_s, fwd.lse_t};
}

std::vector<at::Tensor> relation_kl_backward_cuda_kernel(
    const at::Tensor& grad_kl, const at::Tensor& x_s, const std::optional<at::Tensor>& y_s,
    const at::Tensor& x_t, const std::optional<at::Tensor>& y_t, const at::Tensor& lse_s,
    const at::Tensor& lse_t, const std::optional<at::Tensor>& key_mask, bool causal,
    std::optional<double> scale_s, std::optional<double> scale_t, bool deterministic) {
  const RelationKLInputs in =
      relation_kl_inputs_make(x_s, y_s, x_t, y_t, key_mask, causal, scale_s, scale_t);
  const c10::cuda::CUDAGuard device_guard(in.x_s.device());
  RelationKLBackward bwd = relation_kl_backward_prepare(in, grad_kl, lse_s, lse_t, deterministic);
  bwd.params.stream = current_stream();
  relation_kl_core_run(&relation_kl_backward_cuda, bwd.params);
  return relation_kl_backward_results(in, bwd);
}

}  // namespace

TORCH_LIBRARY_IMPL(linear_ard, CUDA, m) {
  m.impl("relation_kl", &relation_kl_cuda_kernel);
  m.impl("relation_kl_backward", &relation_kl_backward_cuda_kernel);
}

}  // namespace linear_ard::ops
