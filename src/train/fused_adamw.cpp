// fused_adamw: libtorch AdamW's state and options, updated by at::_fused_adamw_.
#include "linear_ard/train/fused_adamw.h"

#include <stdexcept>
#include <tuple>
#include <vector>

namespace linear_ard::train {

namespace {

// The lists one fused call updates: parameters of one device and dtype.
struct FusedLists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
};

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    if (o.amsgrad()) throw std::invalid_argument("FusedAdamW: amsgrad is not supported");
    std::map<std::tuple<int, int, int>, FusedLists> lists;  // by device type, device index, dtype
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().is_sparse()) throw std::invalid_argument("FusedAdamW: sparse gradients are not supported");
      void* key = p.unsafeGetTensorImpl();
      auto& slot = state_[key];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
      torch::Tensor& count = steps_[key];
      if (!count.defined())
        count = torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat));
      state.step(state.step() + 1);
      FusedLists& l = lists[{static_cast<int>(p.device().type()), p.device().index(), static_cast<int>(p.scalar_type())}];
      l.params.push_back(p);
      l.grads.push_back(p.grad());
      l.exp_avgs.push_back(state.exp_avg());
      l.exp_avg_sqs.push_back(state.exp_avg_sq());
      l.steps.push_back(count);
    }
    const auto [beta1, beta2] = o.betas();
    for (auto& [where, l] : lists) {
      torch::_foreach_add_(l.steps, 1);
      at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, l.steps, o.lr(), beta1,
                        beta2, o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false);
    }
  }
  return loss;
}

void FusedAdamW::load(torch::serialize::InputArchive& archive) {
  torch::optim::AdamW::load(archive);
  steps_.clear();
}

}  // namespace linear_ard::train
