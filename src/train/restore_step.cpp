// restore_step: micro-batch forward/backward, NaN/Inf checks, gradient clipping, AdamW update.
#include "linear_ard/train/restore_step.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "linear_ard/dist/gradient_buckets.h"  // defines: GradientBuckets, Distributed
#include "linear_ard/train/step_profile.h"     // defines: PhaseScope

namespace linear_ard::train {

namespace {

// The gradients of `params` that exist.
std::vector<torch::Tensor> gradients_of(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

// The global 2-norm of `grads` on their device (torch.nn.utils.clip_grad_norm_ with foreach: one
// multi-tensor norm, in fp32 also for gradients held in the model dtype), as a 1-element fp64
// tensor; 0 without gradients.
torch::Tensor grad_norm_device(const std::vector<torch::Tensor>& grads, const torch::TensorOptions& options) {
  if (grads.empty()) return torch::zeros({1}, options);
  return torch::stack(torch::_foreach_norm(grads, 2, torch::kFloat)).norm(2).to(torch::kDouble).reshape({1});
}

// The factor torch.nn.utils.clip_grad_norm_ scales gradients of `norm` by: below 1 when the norm is
// above max_norm and finite (an infinite max_norm only measures).
double clip_coef(double norm, double max_norm) {
  const double coef = max_norm / (norm + 1e-6);
  return std::isfinite(norm) && coef < 1.0 ? coef : 1.0;
}

// The step's loss and parts (summed over the micro-batches, then their means; fp64 on the loss's
// device), in the order total, then the parts by name.
struct StepSums {
  torch::Tensor values;
  std::vector<std::string> names;

  void add(const ObjectiveLoss& l) {
    std::vector<torch::Tensor> v{l.total.detach().to(torch::kDouble).reshape({})};
    std::vector<std::string> keys;
    for (const auto& [k, t] : l.parts) {
      v.push_back(t.reshape({}));
      keys.push_back(k);
    }
    const torch::Tensor stacked = torch::stack(v);
    if (!values.defined()) {
      values = torch::zeros_like(stacked);
      names = keys;
    }
    if (keys != names) throw std::logic_error("restore_step: the micro-batches' losses have different parts");
    values += stacked;
  }
  // Sums to means over the micro-batches.
  void mean(int64_t accum) { values /= static_cast<double>(accum); }
};

// Every rank's loss is a mean over equally many blocks: the global mean is the mean over ranks.
void sums_average_ranks(StepSums& sums, const dist::GradientBuckets& gradients) {
  const dist::Distributed& d = gradients.distributed();
  d.all_reduce_sum(sums.values, "averaging the step's loss");
  sums.values /= static_cast<double>(d.world_size());
}

// The step's result from the host copy of [means..., grad norm]; throws StepDiverged on a non-finite
// loss or norm (the update not yet applied).
StepResult step_result_read(const StepSums& sums, const torch::Tensor& host, int64_t step) {
  const auto* v = host.data_ptr<double>();
  StepResult result;
  result.loss = v[0];
  for (size_t i = 0; i < sums.names.size(); ++i) result.parts[sums.names[i]] = v[i + 1];
  result.grad_norm = v[sums.names.size() + 1];
  const std::string where = "step " + std::to_string(step) + ": ";
  const std::string advice = "; stopped before this step's update (try dtype=fp32 or a lower lr)";
  if (!std::isfinite(result.loss)) {
    std::string detail;
    for (const auto& [k, x] : result.parts) detail += (detail.empty() ? "" : ", ") + k + " " + std::to_string(x);
    throw StepDiverged(where + "loss is " + std::to_string(result.loss) + " (" + detail + ")" + advice);
  }
  if (!std::isfinite(result.grad_norm))
    throw StepDiverged(where + "gradient norm is " + std::to_string(result.grad_norm) + advice);
  return result;
}

}  // namespace

StepResult restore_step(const StageLoss& loss, TrainableSet& trainables, FusedAdamW& optimizer,
                        const std::function<torch::Tensor()>& next_batch, const StepSettings& settings) {
  for (auto& group : optimizer.param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(settings.lr);
  // With buckets the gradients are views of their flat buffers, which step_begin zeroes (libtorch's
  // zero_grad would detach_ them in place, which views refuse).
  if (settings.gradients) {
    settings.gradients->step_begin();
  } else {
    optimizer.zero_grad();
  }
  const bool hold = settings.hold_gradients && settings.grad_accum == 1 && !settings.gradients &&
                    settings.dtype != torch::kFloat;
  trainables.held().clear();  // what a step that threw (diverged, out of memory) left held
  // Nothing is read to the host until every micro-batch's backward is queued: a non-finite loss
  // backpropagates non-finite gradients, and is caught below, before the update.
  StepSums sums;
  for (int64_t a = 0; a < settings.grad_accum; ++a) {
    torch::Tensor batch;
    {
      PhaseScope phase("data");
      batch = next_batch();
    }
    // The casts live on in the graph only, so that backward frees each as it passes its layer; the
    // layers' casts are made as each layer runs (deferred), so recomputed layers keep none.
    const ObjectiveLoss l = [&] {
      model::Overrides overrides;
      {
        PhaseScope phase("cast_trainables");
        // hold: one backward an update, so the gradients are held in the model dtype and applied
        // a few units at a time (held_gradients.h), the values those of the fp32 gradients.
        overrides = trainables.overrides(settings.dtype, /*training=*/true, hold, /*defer=*/true);
      }
      return loss(overrides, batch);
    }();
    if (settings.gradients && a + 1 == settings.grad_accum) settings.gradients->arm();
    PhaseScope phase("backward");
    (l.total / static_cast<double>(settings.grad_accum)).backward();
    sums.add(l);
  }
  sums.mean(settings.grad_accum);
  if (settings.gradients) {
    PhaseScope phase("all_reduce");
    settings.gradients->finish();
    sums_average_ranks(sums, *settings.gradients);
  }
  StepResult result;
  double coef = 1.0;
  {
    PhaseScope phase("clip_grad_norm");
    const std::vector<torch::Tensor> grads =
        hold ? trainables.held().held() : gradients_of(trainables.parameters());
    const torch::Tensor norm = grad_norm_device(grads, sums.values.options());
    result = step_result_read(sums, torch::cat({sums.values, norm}).cpu(), settings.global_step);
    coef = clip_coef(result.grad_norm,
                     settings.clip_grad_norm > 0 ? settings.clip_grad_norm : std::numeric_limits<double>::infinity());
    if (!hold && coef < 1.0 && !grads.empty()) torch::_foreach_mul_(grads, coef);
  }
  PhaseScope phase("optimizer");
  if (hold) {
    trainables.held().apply(optimizer, coef);
  } else {
    optimizer.step();
  }
  return result;
}

}  // namespace linear_ard::train
