// activation_recompute: a custom autograd Function that stores only its inputs and reruns in
// backward, letting go of its closure once it has.
#include "linear_ard/model/activation_recompute.h"

#include <mutex>

namespace linear_ard::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The generators a layer can draw from (LoRA dropout): the CPU one, and the CUDA one of a CUDA
// input. Their states are kept at forward and put back for the recomputation, as
// torch.utils.checkpoint's preserve_rng_state does, so backward sees the forward's dropout masks.
std::vector<at::Generator> generators_of(const torch::Tensor& input) {
  std::vector<at::Generator> out{at::globalContext().defaultGenerator(torch::kCPU)};
  if (input.is_cuda()) out.push_back(at::globalContext().defaultGenerator(input.device()));
  return out;
}

std::vector<torch::Tensor> rng_states_get(std::vector<at::Generator>& generators) {
  std::vector<torch::Tensor> states;
  for (auto& g : generators) {
    std::lock_guard<std::mutex> lock(g.mutex());
    states.push_back(g.get_state());
  }
  return states;
}

void rng_states_set(std::vector<at::Generator>& generators, const std::vector<torch::Tensor>& states) {
  for (size_t i = 0; i < generators.size(); ++i) {
    std::lock_guard<std::mutex> lock(generators[i].mutex());
    generators[i].set_state(states[i]);
  }
}

// saved_data holds IValues only; a capsule carries the closure to backward.
struct RecomputeClosure : torch::CustomClassHolder {
  explicit RecomputeClosure(RecomputedFn f) : fn(std::move(f)) {}
  RecomputedFn fn;
};

struct RecomputeFunction : torch::autograd::Function<RecomputeFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               at::TensorList params, c10::IValue closure) {
    std::vector<torch::Tensor> saved{input};
    saved.insert(saved.end(), params.begin(), params.end());
    ctx->save_for_backward(saved);
    ctx->saved_data["closure"] = closure;
    auto generators = generators_of(input);
    ctx->saved_data["rng"] = rng_states_get(generators);
    return static_cast<RecomputeClosure*>(closure.toCapsule().get())->fn(input);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto* closure = static_cast<RecomputeClosure*>(ctx->saved_data["closure"].toCapsule().get());
    const bool input_grad = saved[0].requires_grad();
    auto input = saved[0].detach().requires_grad_(input_grad);

    // Recompute under the forward's generator states, then continue the stream where it was.
    auto generators = generators_of(input);
    const std::vector<torch::Tensor> current = rng_states_get(generators);
    rng_states_set(generators, ctx->saved_data["rng"].toTensorVector());
    torch::AutoGradMode grad_on(true);
    auto output = closure->fn(input);
    rng_states_set(generators, current);

    variable_list wrt;
    if (input_grad) wrt.push_back(input);
    for (size_t i = 1; i < saved.size(); ++i) wrt.push_back(saved[i]);
    variable_list grads = wrt.empty() ? variable_list{}
                                      : torch::autograd::grad({output}, wrt, {grad_outputs[0]},
                                                              /*retain_graph=*/false,
                                                              /*create_graph=*/false,
                                                              /*allow_unused=*/true);
    // The closure (and the weights it holds) is not needed again: let it go now rather than when
    // the whole graph is freed, after the last layer's backward.
    ctx->saved_data.erase("closure");
    variable_list result;
    result.push_back(input_grad ? grads[0] : torch::Tensor());
    result.insert(result.end(), grads.begin() + (input_grad ? 1 : 0), grads.end());
    result.emplace_back();  // the closure
    return result;
  }
};

}  // namespace

torch::Tensor activation_recompute_apply(const RecomputedFn& fn, const torch::Tensor& input,
                               const std::vector<torch::Tensor>& params) {
  auto closure = c10::IValue::make_capsule(c10::make_intrusive<RecomputeClosure>(fn));
  return RecomputeFunction::apply(input, at::TensorList(params), closure);
}

}  // namespace linear_ard::model
