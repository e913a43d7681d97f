// pretrain_trainer: the pretrain driver over the shared run phases: a random model, the LM loss on
// every tensor at the native context, held-out LM loss as the evaluation.
#include "linear_ard/train/pretrain_trainer.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "linear_ard/io/tokenizer.h"             // defines: tokenizer_load
#include "linear_ard/train/metrics_log.h"        // defines: progress_break
#include "linear_ard/train/pretrain_eval.h"      // defines: pretrain_evaluate
#include "linear_ard/train/pretrain_init.h"      // defines: pretrain_folder_init
#include "linear_ard/train/restore_objective.h"  // defines: objective_lm
#include "run.h"                                 // defines: Run, run_progress_start
#include "run_loop.h"                            // defines: run_stages
#include "run_result.h"                          // defines: run_result_write

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The plan of a pretraining run: the "teacher" is a random model that keeps its native RoPE, and
// nothing reads it as a teacher but the saved dtypes.
RunPlan pretrain_plan(const RestoreConfig& config, const SampleMaker& passkey_sample) {
  RunPlan plan = run_plan_begin(config, "pretrain");
  const RestoreConfig& c = plan.config;
  if (!fs::is_directory(c.pretrain.tokenizer))
    throw std::invalid_argument("config key 'pretrain.tokenizer': folder " + c.pretrain.tokenizer + " does not exist");
  plan.tokenizer = io::tokenizer_load(c.pretrain.tokenizer);
  plan.teacher = pretrain_folder_init(c.pretrain, *plan.tokenizer, c.seed);
  plan.student_config = plan.teacher.model_config;
  plan.mix = {c.pretrain.passkey_fraction, c.seed, c.pretrain.answer_weight, passkey_sample};
  run_plan_finish(plan);
  return plan;
}

json pretrain_eval_record(const RunPlan& plan, const RunModel& m, int64_t step) {
  const PretrainEval e =
      pretrain_evaluate(m.weights, m.student_rope, m.trainables->overrides(plan.dtype, /*training=*/false), m.eval_ids);
  progress_break();
  std::printf("eval step %ld | held-out LM loss %.4f | perplexity %.2f\n", static_cast<long>(step), e.loss_lm, e.perplexity);
  std::fflush(stdout);
  return {{"step", step}, {"eval", true}, {"loss_lm", e.loss_lm}, {"perplexity", e.perplexity}};
}

}  // namespace

void pretrain_run(const RestoreConfig& config, const SampleMaker& passkey_sample) {
  const auto run_start = std::chrono::steady_clock::now();
  Run run(pretrain_plan(config, passkey_sample), run_start);
  run.evaluate = [&run](int64_t step) {
    json record = pretrain_eval_record(run.plan, run.model, step);
    run.outputs.append(record);
    return record;
  };
  const RunPlan& plan = run.plan;
  const model::ModelConfig& mc = plan.teacher.model_config;
  std::printf("pretrain: random %ld-layer model (hidden %ld, native context %ld, vocab %ld) -> %s: %ld parameters, %s %s\n",
              static_cast<long>(mc.num_hidden_layers), static_cast<long>(mc.hidden_size), static_cast<long>(plan.native()),
              static_cast<long>(mc.vocab_size), plan.config.output.c_str(),
              static_cast<long>(run.model.trainables->parameter_count()), enum_name(plan.config.device), enum_name(plan.config.dtype));
  run_progress_start(run);
  RunModel& model = run.model;
  const StageLoss lm = [&model](const model::Overrides& o, const torch::Tensor& ids) {
    return objective_lm(model.ctx, o, ids, model.batch_weights);
  };
  run_stages_build(run, lm);
  if (!run_stages(run) || !plan.main_rank) return;

  run_result_write(run);
  const json& before = run.progress.eval_before;
  const json& after = run.progress.eval_after;
  std::printf("pretrain: held-out LM loss %.4f -> %.4f (perplexity %.2f -> %.2f)\n", before.value("loss_lm", 0.0),
              after.value("loss_lm", 0.0), before.value("perplexity", 0.0), after.value("perplexity", 0.0));
}

}  // namespace linear_ard::train
