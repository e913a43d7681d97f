// Autograd kernel of relation_kl: a torch::autograd::Function whose backward is the
// relation_kl_backward op, so C++ and Python callers get the student's gradients alike.
#include <torch/autograd.h>
#include <torch/library.h>

#include "linear_ard/ops/relation_kl.h"  // defines: relation_kl, relation_kl_backward

namespace linear_ard::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::optional<at::Tensor> defined_or_none(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

class RelationKLFunction : public torch::autograd::Function<RelationKLFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x_s,
                               const std::optional<at::Tensor>& y_s, const at::Tensor& x_t,
                               const std::optional<at::Tensor>& y_t,
                               const std::optional<at::Tensor>& key_mask, bool causal,
                               std::optional<double> scale_s, std::optional<double> scale_t,
                               bool deterministic) {
    at::Tensor kl, lse_s, lse_t;
    {
      const at::AutoDispatchBelowADInplaceOrView below_autograd;
      std::tie(kl, lse_s, lse_t) =
          relation_kl(x_s, y_s, x_t, y_t, key_mask, causal, scale_s, scale_t, deterministic);
    }
    // The backward recomputes both relations from the inputs; the LSEs make that one pass.
    ctx->save_for_backward({x_s, y_s.value_or(at::Tensor()), x_t, y_t.value_or(at::Tensor()),
                            key_mask.value_or(at::Tensor()), lse_s, lse_t});
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["scale_s"] = scale_s;
    ctx->saved_data["scale_t"] = scale_t;
    ctx->saved_data["deterministic"] = deterministic;
    // The LSEs are statistics for the backward, not losses: no gradient flows through them.
    ctx->mark_non_differentiable({lse_s, lse_t});
    return {kl, lse_s, lse_t};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    // One gradient slot per forward argument; only x_s and y_s receive one.
    variable_list grads(9);
    const at::Tensor& grad_kl = grad_outputs[0];
    if (!grad_kl.defined()) return grads;
    const variable_list saved = ctx->get_saved_variables();
    const std::vector<at::Tensor> student_grads = relation_kl_backward(
        grad_kl, saved[0], defined_or_none(saved[1]), saved[2], defined_or_none(saved[3]),
        saved[5], saved[6], defined_or_none(saved[4]), ctx->saved_data["causal"].toBool(),
        ctx->saved_data["scale_s"].toOptional<double>(),
        ctx->saved_data["scale_t"].toOptional<double>(), ctx->saved_data["deterministic"].toBool());
    grads[0] = student_grads[0];
    if (student_grads.size() > 1) grads[1] = student_grads[1];
    return grads;
  }
};

std::tuple<at::Tensor, at::Tensor, at::Tensor> relation_kl_autograd_kernel(
    const at::Tensor& x_s, const std::optional<at::Tensor>& y_s, const at::Tensor& x_t,
    const std::optional<at::Tensor>& y_t, const std::optional<at::Tensor>& key_mask, bool causal,
    std::optional<double> scale_s, std::optional<double> scale_t, bool deterministic) {
  const variable_list outputs =
      RelationKLFunction::apply(x_s, y_s, x_t, y_t, key_mask, causal, scale_s, scale_t, deterministic);
  return {outputs[0], outputs[1], outputs[2]};
}

}  // namespace

TORCH_LIBRARY_IMPL(linear_ard, Autograd, m) {
  m.impl("relation_kl", &relation_kl_autograd_kernel);
}

}  // namespace linear_ard::ops
