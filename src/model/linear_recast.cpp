// linear_recast: a linear that keeps its weight's source for backward, not the weight (a cast).
#include "linear_ard/model/linear_recast.h"

#include <stdexcept>

#include "linear_ard/model/rms_norm.h"  // defines: rms_norm

namespace linear_ard::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Inputs: x, weight, source, `bias` (none or one: autograd takes no undefined tensor as an input),
// `norm` (none, or x_from's input and weight, detached: they get no gradient here) and its eps.
struct LinearRecast : torch::autograd::Function<LinearRecast> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& source, at::TensorList bias, at::TensorList norm, double eps) {
    if (norm.empty()) ctx->save_for_backward({x, source});
    else ctx->save_for_backward({norm[0], norm[1], source});
    ctx->saved_data["dtype"] = static_cast<int64_t>(weight.scalar_type());
    ctx->saved_data["bias"] = !bias.empty();
    ctx->saved_data["norm"] = !norm.empty();
    ctx->saved_data["eps"] = eps;
    return torch::nn::functional::linear(x, weight, bias.empty() ? torch::Tensor() : bias[0]);
  }

  // The GEMMs torch's linear runs backward (mm_mat1_backward / mm_mat2_backward of its mm or addmm
  // on x flattened to rows): dx = dy W, dW = dy^T x, db = the rows' sum of dy.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const bool bias = ctx->saved_data["bias"].toBool(), norm = ctx->saved_data["norm"].toBool();
    const torch::Tensor& source = saved.back();
    const torch::Tensor dy = grads[0].reshape({-1, grads[0].size(-1)});
    variable_list out(4 + (bias ? 1 : 0) + (norm ? 2 : 0));
    if (ctx->needs_input_grad(0)) {
      const torch::Tensor w = source.to(static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt()));
      auto sizes = grads[0].sizes().vec();
      sizes.back() = w.size(1);
      out[0] = dy.mm(w).view(sizes);
    }
    if (ctx->needs_input_grad(1)) {
      torch::NoGradGuard no_grad;
      const torch::Tensor x = norm ? rms_norm(saved[0], saved[1], ctx->saved_data["eps"].toDouble()) : saved[0];
      out[1] = dy.t().mm(x.reshape({-1, x.size(-1)}));
    }
    if (bias && ctx->needs_input_grad(3)) out[3] = dy.sum(0);
    return out;
  }
};

}  // namespace

torch::Tensor linear_recast(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& source,
                            const torch::Tensor& bias, const NormedInput* x_from) {
  if (!source.defined() || !torch::GradMode::is_enabled() || !weight.requires_grad() || x.dim() < 1)
    return torch::nn::functional::linear(x, weight, bias);
  if (weight.dim() != 2 || source.sizes() != weight.sizes() || source.device() != weight.device() ||
      source.requires_grad())
    throw std::invalid_argument("linear_recast: weight " + c10::str(weight.sizes(), " on ", weight.device()) +
                                " is not a cast of source " +
                                c10::str(source.sizes(), " on ", source.device(),
                                         source.requires_grad() ? " (which requires grad)" : ""));
  if (x_from && x_from->input.sizes() != x.sizes())
    throw std::invalid_argument("linear_recast: x " + c10::str(x.sizes()) + " is not an RMSNorm of x_from's input " +
                                c10::str(x_from->input.sizes()));
  std::vector<torch::Tensor> bias_list, norm_list;
  if (bias.defined()) bias_list.push_back(bias);
  if (x_from) norm_list = {x_from->input.detach(), x_from->weight.detach()};
  return LinearRecast::apply(x, weight, source, at::TensorList(bias_list), at::TensorList(norm_list),
                             x_from ? x_from->eps : 0.0);
}

}  // namespace linear_ard::model
