// Run: the one object a training run's phases build and the stage loop works on, in the shape of
// torchtune's recipes: plan (model, lengths, data; run_plan.h) -> resume (run_resume.h) -> the
// output folder (run_outputs.h) -> the model (run_model.h) -> each stage's loop (run_loop.h) -> the
// results (run_result.h). The restore and pretrain drivers differ only in their plan, their
// evaluation and their stage-1 loss. Private to src/train.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_model.h"
#include "run_outputs.h"
#include "run_plan.h"
#include "run_resume.h"
#include "run_stage_spec.h"

namespace linear_ard::train {

// A held-out evaluation at a global step: appends its metrics line, prints it, returns it.
using RunEvaluate = std::function<nlohmann::json(int64_t step)>;

// What the stages have done so far (carried over from a resumed checkpoint).
struct RunProgress {
  int64_t tokens = 0;
  double train_s = 0;
  nlohmann::json eval_before, eval_after;
};

struct Run {
  // The phases after the plan, in order: resume point, output folder, model. `start`: when the
  // run began (its wall time in the summary).
  Run(RunPlan plan, std::chrono::steady_clock::time_point start);
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  RunPlan plan;
  ResumePoint resume;
  RunOutputs outputs;
  RunModel model;
  std::chrono::steady_clock::time_point start;
  RunEvaluate evaluate;            // the driver's
  std::vector<StageSpec> stages;   // run_stages_build
  RunProgress progress;            // run_progress_start, then the stage loop's
};

// Starts run.progress for a fresh or resumed run: evaluates at step 0 for a fresh run (a non-finite
// evaluation is an error: the model computes NaN/Inf), takes the previous records' first and last
// evaluations for a resumed one.
void run_progress_start(Run& run);

// run.stages from the config: stage 1 from the top-level keys with `stage1_loss`, stage 2 (light
// CPT: the LM loss under the student's RoPE) when stage2.steps > 0.
void run_stages_build(Run& run, StageLoss stage1_loss);

}  // namespace linear_ard::train
