// checkpoint_apply: a custom autograd Function that stores only its inputs and reruns in backward.
#include "linear_ard/model/checkpointing.h"

namespace linear_ard::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// saved_data holds IValues only; a capsule carries the closure to backward.
struct CheckpointClosure : torch::CustomClassHolder {
  explicit CheckpointClosure(CheckpointedFn f) : fn(std::move(f)) {}
  CheckpointedFn fn;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               at::TensorList params, c10::IValue closure) {
    std::vector<torch::Tensor> saved{input};
    saved.insert(saved.end(), params.begin(), params.end());
    ctx->save_for_backward(saved);
    ctx->saved_data["closure"] = closure;
    return static_cast<CheckpointClosure*>(closure.toCapsule().get())->fn(input);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto* closure = static_cast<CheckpointClosure*>(ctx->saved_data["closure"].toCapsule().get());
    const bool input_grad = saved[0].requires_grad();
    auto input = saved[0].detach().requires_grad_(input_grad);

    torch::AutoGradMode grad_on(true);
    auto output = closure->fn(input);

    variable_list wrt;
    if (input_grad) wrt.push_back(input);
    for (size_t i = 1; i < saved.size(); ++i) wrt.push_back(saved[i]);
    variable_list grads = wrt.empty() ? variable_list{}
                                      : torch::autograd::grad({output}, wrt, {grad_outputs[0]},
                                                              /*retain_graph=*/false,
                                                              /*create_graph=*/false,
                                                              /*allow_unused=*/true);
    variable_list result;
    result.push_back(input_grad ? grads[0] : torch::Tensor());
    result.insert(result.end(), grads.begin() + (input_grad ? 1 : 0), grads.end());
    result.emplace_back();  // the closure
    return result;
  }
};

}  // namespace

torch::Tensor checkpoint_apply(const CheckpointedFn& fn, const torch::Tensor& input,
                               const std::vector<torch::Tensor>& params) {
  auto closure = c10::IValue::make_capsule(c10::make_intrusive<CheckpointClosure>(fn));
  return CheckpointFunction::apply(input, at::TensorList(params), closure);
}

}  // namespace linear_ard::model
