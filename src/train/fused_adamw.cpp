// fused_adamw: libtorch AdamW's state and options, updated by at::_fused_adamw_ (fp32 gradients)
// or by the train layer's kernel (gradients held in the model dtype).
#include "linear_ard/train/fused_adamw.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#ifdef LINEAR_ARD_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "cuda/train_kernels.h"
#endif

namespace linear_ard::train {

namespace {

// The lists one fused call updates: parameters of one device and dtype.
struct FusedLists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
};
using ListsByPlace = std::map<std::tuple<int, int, int>, FusedLists>;  // by device type, index, dtype

const torch::optim::AdamWOptions& options_checked(const torch::optim::OptimizerParamGroup& group) {
  const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
  if (o.amsgrad()) throw std::invalid_argument("FusedAdamW: amsgrad is not supported");
  return o;
}

// The group's parameters that grad_of gives a gradient, with their states (made on first use) and
// step counters, each state's step advanced by one; the counters are advanced by the caller.
ListsByPlace lists_of(torch::optim::OptimizerParamGroup& group,
                      const std::function<torch::Tensor(const torch::Tensor&)>& grad_of,
                      ska::flat_hash_map<void*, std::unique_ptr<torch::optim::OptimizerParamState>>& states,
                      std::map<void*, torch::Tensor>& steps) {
  ListsByPlace lists;
  for (auto& p : group.params()) {
    torch::Tensor grad = grad_of(p);
    if (!grad.defined()) continue;
    void* key = p.unsafeGetTensorImpl();
    auto& slot = states[key];
    if (!slot) {
      auto fresh = std::make_unique<torch::optim::AdamWParamState>();
      fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      slot = std::move(fresh);
    }
    auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
    torch::Tensor& count = steps[key];
    if (!count.defined())
      count = torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat));
    state.step(state.step() + 1);
    FusedLists& l = lists[{static_cast<int>(p.device().type()), p.device().index(), static_cast<int>(p.scalar_type())}];
    l.params.push_back(p);
    l.grads.push_back(std::move(grad));
    l.exp_avgs.push_back(state.exp_avg());
    l.exp_avg_sqs.push_back(state.exp_avg_sq());
    l.steps.push_back(count);
  }
  return lists;
}

void fused_update(const FusedLists& l, const torch::optim::AdamWOptions& o) {
  const auto [beta1, beta2] = o.betas();
  at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, l.steps, o.lr(), beta1, beta2,
                    o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false);
}

#ifdef LINEAR_ARD_WITH_CUDA
// The held-gradient kernel on l when it takes it (CUDA, fp32 parameters, one model dtype of
// contiguous gradients); false leaves l to the cast-up path.
bool held_update_cuda(const FusedLists& l, const torch::optim::AdamWOptions& o, double coef) {
  const torch::Tensor& first = l.params.front();
  if (!first.is_cuda() || first.scalar_type() != torch::kFloat) return false;
  const auto dt = l.grads.front().scalar_type();
  if (dt != torch::kBFloat16 && dt != torch::kHalf) return false;
  std::vector<cuda::AdamwTensor> tensors;
  for (size_t i = 0; i < l.params.size(); ++i) {
    const torch::Tensor* all[] = {&l.params[i], &l.grads[i], &l.exp_avgs[i], &l.exp_avg_sqs[i]};
    for (const torch::Tensor* t : all)
      if (!t->is_contiguous()) return false;
    if (l.grads[i].scalar_type() != dt) return false;
    tensors.push_back({l.params[i].data_ptr<float>(), l.exp_avgs[i].data_ptr<float>(),
                       l.exp_avg_sqs[i].data_ptr<float>(), l.grads[i].data_ptr(), l.steps[i].data_ptr<float>(),
                       l.params[i].numel()});
  }
  const auto [beta1, beta2] = o.betas();
  const cuda::AdamwHyper h{static_cast<float>(o.lr()),           static_cast<float>(beta1),
                           static_cast<float>(beta2),            static_cast<float>(o.weight_decay()),
                           static_cast<float>(o.eps()),          static_cast<float>(coef),
                           coef < 1.0};
  const c10::cuda::CUDAGuard guard(first.device());
  cuda::adamw_held_update(tensors.data(), static_cast<int64_t>(tensors.size()),
                          dt == torch::kBFloat16 ? cuda::GradDtype::kBFloat16 : cuda::GradDtype::kFloat16, h,
                          c10::cuda::getCurrentCUDAStream(first.device().index()).stream());
  return true;
}
#endif

// l's gradients cast to fp32 and scaled by coef when coef < 1, then the fused update.
void held_update_cast(FusedLists& l, const torch::optim::AdamWOptions& o, double coef) {
  for (torch::Tensor& g : l.grads) {
    g = g.to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
    if (coef < 1.0) g.mul_(coef);
  }
  fused_update(l, o);
}

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  const auto grad_of = [](const torch::Tensor& p) {
    if (p.grad().defined() && p.grad().is_sparse())
      throw std::invalid_argument("FusedAdamW: sparse gradients are not supported");
    return p.grad();
  };
  for (auto& group : param_groups_) {
    const auto& o = options_checked(group);
    for (auto& [where, l] : lists_of(group, grad_of, state_, steps_)) {
      torch::_foreach_add_(l.steps, 1);
      fused_update(l, o);
    }
  }
  return loss;
}

void FusedAdamW::step_held(const std::vector<HeldGrad>& given, double coef) {
  torch::NoGradGuard no_grad;
  std::unordered_set<const void*> mine;
  for (const auto& group : param_groups_)
    for (const auto& p : group.params()) mine.insert(p.unsafeGetTensorImpl());
  std::unordered_map<const void*, torch::Tensor> grads;
  for (size_t i = 0; i < given.size(); ++i) {
    const HeldGrad& g = given[i];
    if (!mine.count(g.param.unsafeGetTensorImpl()))
      throw std::invalid_argument("FusedAdamW::step_held: parameter " + std::to_string(i) + " is not in this optimizer");
    if (g.grad.numel() != g.param.numel())
      throw std::invalid_argument("FusedAdamW::step_held: parameter " + std::to_string(i) + " has " +
                                  std::to_string(g.param.numel()) + " elements, its gradient " +
                                  std::to_string(g.grad.numel()));
    grads[g.param.unsafeGetTensorImpl()] = g.grad.reshape(g.param.sizes());
  }
  const auto grad_of = [&grads](const torch::Tensor& p) {
    const auto it = grads.find(p.unsafeGetTensorImpl());
    return it == grads.end() ? torch::Tensor() : it->second;
  };
  for (auto& group : param_groups_) {
    const auto& o = options_checked(group);
    for (auto& [where, l] : lists_of(group, grad_of, state_, steps_)) {
      torch::_foreach_add_(l.steps, 1);
#ifdef LINEAR_ARD_WITH_CUDA
      if (held_update_cuda(l, o, coef)) continue;
#endif
      held_update_cast(l, o, coef);
    }
  }
}

void FusedAdamW::load(torch::serialize::InputArchive& archive) {
  torch::optim::AdamW::load(archive);
  steps_.clear();
}

}  // namespace linear_ard::train
