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

// The global 2-norm of the gradients before clipping (torch.nn.utils.clip_grad_norm_ with
// foreach: one multi-tensor norm, one multi-tensor scale); scales them to max_norm when above it
// and finite. An infinite max_norm only measures.
double grad_norm_clip(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  const double norm = torch::stack(torch::_foreach_norm(grads, 2)).norm(2).item<double>();
  const double coef = max_norm / (norm + 1e-6);
  if (std::isfinite(norm) && coef < 1.0) torch::_foreach_mul_(grads, coef);
  return norm;
}

}  // namespace

StepResult restore_step(const StageLoss& loss, TrainableSet& trainables, torch::optim::AdamW& optimizer,
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
  StepResult result;
  const auto accum = static_cast<double>(settings.grad_accum);
  for (int64_t a = 0; a < settings.grad_accum; ++a) {
    torch::Tensor batch;
    model::Overrides overrides;
    {
      PhaseScope phase("data");
      batch = next_batch();
    }
    {
      PhaseScope phase("cast_trainables");
      overrides = trainables.overrides(settings.dtype, /*training=*/true);
    }
    const ObjectiveLoss l = loss(overrides, batch);
    const double value = l.total.item<double>();
    if (!std::isfinite(value)) {
      std::string detail;
      for (const auto& [k, v] : l.parts) detail += (detail.empty() ? "" : ", ") + k + " " + std::to_string(v);
      throw StepDiverged("step " + std::to_string(settings.global_step) + ": loss is " + std::to_string(value) +
                               " (" + detail + "); stopped before this step's update (try dtype=fp32 or a lower lr)");
    }
    if (settings.gradients && a + 1 == settings.grad_accum) settings.gradients->arm();
    PhaseScope phase("backward");
    (l.total / accum).backward();
    result.loss += value;
    for (const auto& [k, v] : l.parts) result.parts[k] += v;
  }
  result.loss /= accum;
  for (auto& [k, v] : result.parts) v /= accum;
  if (settings.gradients) {
    PhaseScope phase("all_reduce");
    settings.gradients->finish();
    // Every rank's loss is a mean over equally many blocks: the global mean is the mean over ranks.
    const dist::Distributed& d = settings.gradients->distributed();
    std::vector<double> values{result.loss};
    for (const auto& [k, v] : result.parts) values.push_back(v);
    torch::Tensor t = torch::tensor(values, torch::kDouble).to(d.device());
    d.all_reduce_sum(t, "averaging the step's loss");
    t = t.cpu() / static_cast<double>(d.world_size());
    result.loss = t[0].item<double>();
    int64_t i = 1;
    for (auto& [k, v] : result.parts) v = t[i++].item<double>();
  }
  const double max_norm = settings.clip_grad_norm > 0 ? settings.clip_grad_norm : std::numeric_limits<double>::infinity();
  {
    PhaseScope phase("clip_grad_norm");
    result.grad_norm = grad_norm_clip(trainables.parameters(), max_norm);
  }
  if (!std::isfinite(result.grad_norm))
    throw StepDiverged("step " + std::to_string(settings.global_step) + ": gradient norm is " +
                             std::to_string(result.grad_norm) +
                             "; stopped before this step's update (try dtype=fp32 or a lower lr)");
  PhaseScope phase("optimizer");
  optimizer.step();
  return result;
}

}  // namespace linear_ard::train
