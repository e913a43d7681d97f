// RunModel: the fourth phase of a training run: the shared frozen weights (plan.model_tensors,
// moved in), both RoPEs, the trainables (after seeding torch with config.seed) and their gradient
// buckets, the objectives' context, the held-out ids. Private to src/train.
#pragma once

#include <memory>
#include <optional>

#include <torch/torch.h>

#include "linear_ard/dist/gradient_buckets.h"
#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"
#include "linear_ard/train/restore_objective.h"
#include "linear_ard/train/trainable_set.h"
#include "run_plan.h"

namespace linear_ard::train {

// Not movable: ctx points into it.
struct RunModel {
  explicit RunModel(RunPlan& plan);
  RunModel(const RunModel&) = delete;
  RunModel& operator=(const RunModel&) = delete;

  model::LlamaWeights weights;
  model::RopeTables teacher_rope, student_rope;
  std::unique_ptr<TrainableSet> trainables;
  std::optional<dist::GradientBuckets> gradients;
  ObjectiveContext ctx;
  torch::Tensor eval_ids;
  // The LM-loss weights of the micro-batch drawn last (block_mix's; undefined: plain mean):
  // restore_step draws each micro-batch before it calls the loss on it.
  torch::Tensor batch_weights;
};

}  // namespace linear_ard::train
