// Meta kernels of relation_kl and relation_kl_backward: the same validation, output shapes only
// (for torch.compile's fake tensors and shape inference).
#include <torch/library.h>

#include "relation_kl_inputs.h"  // defines: relation_kl_inputs_make, relation_kl_*_prepare

namespace linear_ard::ops {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> relation_kl_meta_kernel(
    const at::Tensor& x_s, const std::optional<at::Tensor>& y_s, const at::Tensor& x_t,
    const std::optional<at::Tensor>& y_t, const std::optional<at::Tensor>& key_mask, bool causal,
    std::optional<double> scale_s, std::optional<double> scale_t, bool /*deterministic*/) {
  return relation_kl_forward_outputs(
      relation_kl_inputs_make(x_s, y_s, x_t, y_t, key_mask, causal, scale_s, scale_t));
}

// Meta tensors carry no data, so preparing the buffers and params costs nothing and keeps the
// shape/dtype checks and result types identical to the device kernels'.
std::vector<at::Tensor> relation_kl_backward_meta_kernel(
    const at::Tensor& grad_kl, const at::Tensor& x_s, const std::optional<at::Tensor>& y_s,
    const at::Tensor& x_t, const std::optional<at::Tensor>& y_t, const at::Tensor& lse_s,
    const at::Tensor& lse_t, const std::optional<at::Tensor>& key_mask, bool causal,
    std::optional<double> scale_s, std::optional<double> scale_t, bool deterministic) {
  const RelationKLInputs in =
      relation_kl_inputs_make(x_s, y_s, x_t, y_t, key_mask, causal, scale_s, scale_t);
  return relation_kl_backward_results(in, relation_kl_backward_prepare(in, grad_kl, lse_s, lse_t, deterministic));
}

}  // namespace

TORCH_LIBRARY_IMPL(linear_ard, Meta, m) {
  m.impl("relation_kl", &relation_kl_meta_kernel);
  m.impl("relation_kl_backward", &relation_kl_backward_meta_kernel);
}

}  // namespace linear_ard::ops
