// restore_step: one optimizer update of a restore stage (micro-batches, checks, clipping, AdamW),
// the unit `linear-ard restore` repeats and the GPU benchmark times.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/train/fused_adamw.h"
#include "linear_ard/train/restore_objective.h"
#include "linear_ard/train/trainable_set.h"

namespace linear_ard::dist {
class GradientBuckets;  // dist/gradient_buckets.h: data-parallel gradient averaging
}  // namespace linear_ard::dist

namespace linear_ard::train {

// A stage's loss on one micro-batch of ids [B, n] under the student's overrides.
using StageLoss = std::function<ObjectiveLoss(const model::Overrides&, const torch::Tensor&)>;

struct StepSettings {
  int64_t grad_accum = 1;       // micro-batches per update; each backpropagates loss / grad_accum
  double lr = 0;                // this update's learning rate (set on every AdamW group)
  double clip_grad_norm = 0;    // 0: measure the norm only
  torch::ScalarType dtype = torch::kFloat;  // the model dtype the trainables are cast to
  int64_t global_step = 0;      // named in errors
  // Data-parallel runs (several ranks): gradients and the reported loss are averaged over the ranks
  // (each rank's micro-batches are its own shard); null: one process.
  dist::GradientBuckets* gradients = nullptr;
  // With one micro-batch, one process and a model dtype other than fp32: hold the gradients in the
  // model dtype and apply them a few units at a time (train/held_gradients.h: half the gradients'
  // memory, the same update); false: fp32 gradients on the parameters, one optimizer step.
  bool hold_gradients = true;
};

// A non-finite loss or gradient norm: the run diverged (or overflowed its dtype) at this step.
struct StepDiverged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct StepResult {
  double loss = 0;                       // mean over the micro-batches
  std::map<std::string, double> parts;  // each a mean over the micro-batches
  double grad_norm = 0;                  // before clipping
};

// zero_grad, then grad_accum times: next_batch(), the loss under trainables.overrides(dtype,
// training=true), backward of loss / grad_accum; then clip and optimizer.step(). A non-finite loss
// or gradient norm throws StepDiverged naming the step before the update is applied.
StepResult restore_step(const StageLoss& loss, TrainableSet& trainables, FusedAdamW& optimizer,
                        const std::function<torch::Tensor()>& next_batch, const StepSettings& settings);

}  // namespace linear_ard::train
