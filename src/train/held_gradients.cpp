// held_gradients: compute-dtype gradients held by the casts' backward, applied a few units at a time.
#include "linear_ard/train/held_gradients.h"

#include <stdexcept>
#include <string>

namespace linear_ard::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct HeldCast : torch::autograd::Function<HeldCast> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& source, at::TensorList leaves,
                               int64_t dtype, int64_t unit, c10::IValue held) {
    ctx->saved_data["held"] = std::move(held);
    ctx->saved_data["unit"] = unit;
    ctx->saved_data["inputs"] = static_cast<int64_t>(leaves.size()) + 4;
    ctx->set_materialize_grads(false);  // a cast nothing read holds nothing
    return source.to(static_cast<torch::ScalarType>(dtype), /*non_blocking=*/false, /*copy=*/true);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (grads[0].defined()) {
      auto* held = static_cast<HeldGradients*>(ctx->saved_data["held"].toCapsule().get());
      held->hold(ctx->saved_data["unit"].toInt(), grads[0]);
    }
    return variable_list(static_cast<size_t>(ctx->saved_data["inputs"].toInt()));  // none: held instead
  }
};

}  // namespace

int64_t HeldGradients::unit_add(std::vector<torch::Tensor> leaves) {
  units_.push_back({std::move(leaves), {}});
  return static_cast<int64_t>(units_.size()) - 1;
}

void HeldGradients::hold(int64_t unit, const torch::Tensor& grad) {
  Unit& u = units_.at(static_cast<size_t>(unit));
  if (u.grad.defined())
    throw std::logic_error("HeldGradients: unit " + std::to_string(unit) + " got a second gradient before the update");
  u.grad = grad.reshape(-1);
}

std::vector<torch::Tensor> HeldGradients::held() const {
  std::vector<torch::Tensor> out;
  for (const Unit& u : units_)
    if (u.grad.defined()) out.push_back(u.grad);
  return out;
}

void HeldGradients::apply(FusedAdamW& optimizer, double coef, int64_t step_bytes) {
  std::vector<FusedAdamW::HeldGrad> given;  // what the next step_held updates
  int64_t bytes = 0;
  const auto step = [&] {
    if (given.empty()) return;
    optimizer.step_held(given, coef);
    given.clear();
    bytes = 0;
  };
  for (Unit& u : units_) {
    if (!u.grad.defined()) continue;
    int64_t offset = 0;
    for (const torch::Tensor& leaf : u.leaves) {
      given.push_back({leaf, u.grad.narrow(0, offset, leaf.numel())});
      offset += leaf.numel();
    }
    bytes += u.grad.numel() * 4;
    u.grad.reset();  // the views in `given` keep it until its step
    if (bytes >= step_bytes) step();
  }
  step();
}

void HeldGradients::clear() {
  for (Unit& u : units_) u.grad.reset();
}

torch::Tensor held_cast(const torch::Tensor& source, at::TensorList leaves, torch::ScalarType dtype,
                        const c10::intrusive_ptr<HeldGradients>& held, int64_t unit) {
  return HeldCast::apply(source, leaves, static_cast<int64_t>(dtype), unit, c10::IValue::make_capsule(held));
}

}  // namespace linear_ard::train
