// The C++ entry points of include/linear_ard/ops/relation_kl.h: typed calls through the dispatcher.
#include "linear_ard/ops/relation_kl.h"

#include <ATen/core/dispatch/Dispatcher.h>

namespace linear_ard::ops {

std::tuple<at::Tensor, at::Tensor, at::Tensor> relation_kl(
    const at::Tensor& x_s, const std::optional<at::Tensor>& y_s, const at::Tensor& x_t,
    const std::optional<at::Tensor>& y_t, const std::optional<at::Tensor>& key_mask, bool causal,
    std::optional<double> scale_s, std::optional<double> scale_t, bool deterministic) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("linear_ard::relation_kl", "")
          .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
              const at::Tensor&, const std::optional<at::Tensor>&, const at::Tensor&,
              const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, bool,
              std::optional<double>, std::optional<double>, bool)>();
  return op.call(x_s, y_s, x_t, y_t, key_mask, causal, scale_s, scale_t, deterministic);
}

std::vector<at::Tensor> relation_kl_backward(
    const at::Tensor& grad_kl, const at::Tensor& x_s, const std::optional<at::Tensor>& y_s,
    const at::Tensor& x_t, const std::optional<at::Tensor>& y_t, const at::Tensor& lse_s,
    const at::Tensor& lse_t, const std::optional<at::Tensor>& key_mask, bool causal,
    std::optional<double> scale_s, std::optional<double> scale_t, bool deterministic) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("linear_ard::relation_kl_backward", "")
          .typed<std::vector<at::Tensor>(
              const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
              const at::Tensor&, const std::optional<at::Tensor>&, const at::Tensor&,
              const at::Tensor&, const std::optional<at::Tensor>&, bool, std::optional<double>,
              std::optional<double>, bool)>();
  return op.call(grad_kl, x_s, y_s, x_t, y_t, lse_s, lse_t, key_mask, causal, scale_s, scale_t,
                 deterministic);
}

}  // namespace linear_ard::ops
