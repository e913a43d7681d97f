// run_loop: one StageLoop per stage over the run object (paper Sec. 3.2-3.4, Appendix B).
#include "run_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "checkpoint_keeper.h"             // defines: CheckpointKeeper
#include "linear_ard/train/fused_adamw.h"  // defines: FusedAdamW
#include "linear_ard/train/lr_schedule.h"  // defines: lr_schedule_at
#include "linear_ard/train/metrics_log.h"  // defines: progress_print, progress_break, memory_peak_bytes
#include "linear_ard/train/step_profile.h" // defines: StepProfile
#include "run_batches.h"                   // defines: batch_source
#include "run_divergence.h"                // defines: loss_diverged, eval_nonfinite

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// What a profile of `stage`'s steps shows, for its summary's title.
std::string profile_title(const RunPlan& plan, const StageSpec& stage) {
  const RestoreConfig& c = plan.config;
  const std::string objective = stage.stage == 2 ? "cpt (stage 2)" : enum_name(c.method);
  return plan.name + " stage " + std::to_string(stage.stage) + ", " + objective + ", trainable " +
         enum_name(c.trainable) + ", ctx " + std::to_string(stage.ctx_len) + " x batch " +
         std::to_string(stage.batch_size) + " x accum " + std::to_string(stage.grad_accum) + ", " +
         enum_name(c.device) + " " + enum_name(c.dtype);
}

// The first step loss of `stage` in a resumed run's records (the divergence rule's reference).
std::optional<double> stage_first_loss(const ResumePoint& resume, int64_t stage) {
  for (const auto& r : resume.records)
    if (!r.value("eval", false) && r.value("stage", int64_t{1}) == stage) return r.at("loss").get<double>();
  return std::nullopt;
}

// One stage's loop over the run: its optimizer and schedule, the divergence rule's reference, and
// what each step does after its update (metrics, progress, evaluation, checkpoint).
class StageLoop {
 public:
  StageLoop(Run& run, const StageSpec& stage, int64_t step_offset, CheckpointKeeper& keeper, StepProfile* profile)
      : run_(run), c_(run.plan.config), stage_(stage), offset_(step_offset), keeper_(keeper), profile_(profile),
        optimizer_(run.model.trainables->parameters(), torch::optim::AdamWOptions(stage.lr).weight_decay(c_.weight_decay)),
        schedule_{stage.lr, stage.warmup_steps, stage.steps, stage.min_lr_ratio},
        reference_(stage_first_loss(run.resume, stage.stage)) {}

  // From the stage's first step (or the resumed one) to its last; false when stop_after_step ended
  // the run (its checkpoint written).
  bool run() {
    for (int64_t step = resume(); step <= stage_.steps; ++step)
      if (!step_run(step)) return false;
    return true;
  }

 private:
  // The stage's first step: after the resumed checkpoint's (its trainables, optimizer, generators
  // and data position restored) when the run resumes inside this stage, else 1.
  int64_t resume() {
    const ResumePoint& resume = run_.resume;
    if (!resume.state || resume.state->stage != stage_.stage) return 1;
    checkpoint_restore(*resume.checkpoint, *run_.model.trainables, optimizer_);
    for (int64_t i = 0; i < resume.state->blocks_consumed; ++i) stage_.blocks->next();
    std::printf("%s: resumed from %s (step %ld)\n", run_.plan.name.c_str(), resume.checkpoint->c_str(),
                static_cast<long>(resume.state->step));
    return resume.state->stage_step + 1;
  }

  // One optimizer step and what follows it; false when the run stops after it.
  bool step_run(int64_t step) {
    const int64_t global = offset_ + step;
    const auto t0 = Clock::now();
    const double lr = lr_schedule_at(schedule_, step - 1);
    const StepResult result = step_update(step, global, lr);
    const double step_s = std::chrono::duration<double>(Clock::now() - t0).count();
    step_account(global, result, lr, step_s);
    const bool evaluated = step == stage_.steps || (c_.eval_every > 0 && global % c_.eval_every == 0);
    if (evaluated) step_evaluate(global);
    return step_checkpoint(step, global, evaluated);
  }

  // The update itself (restore_step), profiled when asked; a non-finite loss or gradient stops the run.
  StepResult step_update(int64_t step, int64_t global, double lr) {
    RunModel& m = run_.model;
    int64_t drawn = (step - 1) * stage_.batch_size * stage_.grad_accum;
    if (profile_) profile_->step_begin(global);
    StepResult result;
    try {
      result = restore_step(stage_.loss, *m.trainables, optimizer_,
                            batch_source(stage_, *run_.plan.tokenizer, run_.plan.device, m.batch_weights, drawn),
                            {stage_.grad_accum, lr, c_.clip_grad_norm, run_.plan.dtype, global,
                             m.gradients ? &*m.gradients : nullptr});
    } catch (const StepDiverged& e) {
      throw std::runtime_error(e.what() + keeper_.diverged());
    }
    if (profile_) profile_->step_end(global, stage_.tokens_per_step(run_.plan.world), profile_title(run_.plan, stage_));
    return result;
  }

  // The step's tokens, time and metrics line; the divergence rule on its loss; the progress line.
  void step_account(int64_t global, const StepResult& result, double lr, double step_s) {
    RunProgress& progress = run_.progress;
    const int64_t tokens_per_step = stage_.tokens_per_step(run_.plan.world);
    progress.train_s += step_s;
    progress.tokens += tokens_per_step;
    json record = {{"step", global}, {"stage", stage_.stage}, {"loss", result.loss}};
    for (const auto& [k, v] : result.parts) record[k] = v;
    record.update({{"lr", lr},
                   {"grad_norm", result.grad_norm},
                   {"tokens", progress.tokens},
                   {"tokens_per_s", static_cast<double>(tokens_per_step) / step_s},
                   {"step_time_s", step_s},
                   {"peak_memory_bytes", memory_peak_bytes(run_.plan.device)}});
    run_.outputs.append(record);
    if (!reference_) reference_ = result.loss;
    if (const auto why = loss_diverged(c_, result.loss, *reference_))
      throw std::runtime_error("step " + std::to_string(global) + ": " + *why + keeper_.diverged());
    keeper_.passed();
    const int64_t total = run_.plan.total_steps();
    if (global % c_.log_every == 0 || global == total) {
      const double eta = progress.train_s / static_cast<double>(global) * static_cast<double>(total - global);
      progress_print(global, total, result.loss, lr, static_cast<double>(tokens_per_step) / step_s, eta);
    }
  }

  void step_evaluate(int64_t global) {
    run_.progress.eval_after = run_.evaluate(global);
    if (const auto bad = eval_nonfinite(run_.progress.eval_after))
      throw std::runtime_error("step " + std::to_string(global) + ": the held-out evaluation gives " + *bad + keeper_.diverged());
  }

  // The checkpoint after `global` when one is due; false when stop_after_step ends the run here.
  bool step_checkpoint(int64_t step, int64_t global, bool evaluated) {
    const RunPlan& plan = run_.plan;
    const bool stop = global == c_.stop_after_step;
    // Every rank holds the same trainables, optimizer and generator state; rank 0 writes them.
    if (plan.main_rank && (stop || (c_.checkpoint_every > 0 && global % c_.checkpoint_every == 0))) {
      const RunProgress& progress = run_.progress;
      checkpoint_save(c_.output,
                      {global, stage_.stage, step, step * stage_.batch_size * stage_.grad_accum, progress.tokens,
                       progress.train_s, plan.world, run_resume_key(c_)},
                      *run_.model.trainables, optimizer_);
      keeper_.saved(global, evaluated);
    }
    if (!stop) return true;
    progress_break();
    std::printf("%s: stopped after step %ld (stop_after_step); resume=true continues from %s\n", plan.name.c_str(),
                static_cast<long>(global), (fs::path(c_.output) / ("checkpoint-" + std::to_string(global))).c_str());
    return false;
  }

  Run& run_;
  const RestoreConfig& c_;
  const StageSpec& stage_;
  int64_t offset_;
  CheckpointKeeper& keeper_;
  StepProfile* profile_;
  FusedAdamW optimizer_;
  LrSchedule schedule_;
  std::optional<double> reference_;
};

}  // namespace

bool run_stages(Run& run) {
  const RunPlan& plan = run.plan;
  const RestoreConfig& c = plan.config;
  CheckpointKeeper keeper(c.output, plan.main_rank,
                          run.resume.state ? std::optional<int64_t>(run.resume.state->step) : std::nullopt);
  std::optional<StepProfile> profile;
  if (c.profile_steps > 0 && plan.main_rank) {
    // Step 1 warms up (allocator, kernels' first launches) unless it is the only one.
    const int64_t first = std::min<int64_t>(2, plan.total_steps());
    profile.emplace((fs::path(c.output) / "profile").string(), first,
                    std::min(c.profile_steps, plan.total_steps() - first + 1), plan.device);
  }
  int64_t step_offset = 0;
  for (const StageSpec& stage : run.stages) {
    const bool finished_before = run.resume.state && run.resume.state->stage > stage.stage;
    if (!finished_before && !StageLoop(run, stage, step_offset, keeper, profile ? &*profile : nullptr).run()) return false;
    step_offset += stage.steps;
  }
  return true;
}

}  // namespace linear_ard::train
