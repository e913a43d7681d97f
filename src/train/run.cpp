// run: the run object's construction, its starting progress and its stages.
#include "run.h"

#include <stdexcept>

#include "linear_ard/train/restore_objective.h"  // defines: objective_lm
#include "run_divergence.h"                       // defines: eval_nonfinite

namespace linear_ard::train {

Run::Run(RunPlan plan_in, std::chrono::steady_clock::time_point start_in)
    : plan(std::move(plan_in)), resume(run_resume_find(plan)), outputs(plan, resume), model(plan), start(start_in) {}

void run_progress_start(Run& run) {
  RunProgress& progress = run.progress;
  const ResumePoint& resume = run.resume;
  if (resume.state) {
    progress.tokens = resume.state->tokens;
    progress.train_s = resume.state->train_s;
  }
  for (const auto& r : resume.records) {
    if (!r.value("eval", false)) continue;
    if (r.at("step").get<int64_t>() == 0) progress.eval_before = r;
    progress.eval_after = r;  // the last one before the checkpoint (a run stopped at its end has its final one)
  }
  if (!resume.state) {
    progress.eval_before = run.evaluate(0);
    if (const auto bad = eval_nonfinite(progress.eval_before))
      throw std::runtime_error("the held-out evaluation before training gives " + *bad + ": the model computes NaN/Inf");
    progress.eval_after = progress.eval_before;
  }
}

void run_stages_build(Run& run, StageLoss stage1_loss) {
  const RestoreConfig& c = run.plan.config;
  RunModel& model = run.model;
  run.stages.push_back({1, c.ctx_len, c.batch_size, c.grad_accum, c.steps, c.warmup_steps, c.lr, c.min_lr_ratio,
                        std::move(stage1_loss), &*run.plan.blocks1, run.plan.mix});
  if (c.stage2.steps > 0) {
    const Stage2Config& s = c.stage2;
    run.stages.push_back({2, s.ctx_len, s.batch_size, s.grad_accum, s.steps, s.warmup_steps, s.lr, s.min_lr_ratio,
                          [&model](const model::Overrides& o, const torch::Tensor& ids) { return objective_lm(model.ctx, o, ids); },
                          &*run.plan.blocks2, BlockMix{}});
  }
}

}  // namespace linear_ard::train
