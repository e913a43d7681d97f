// restore_trainer: the restore driver: stage 1 (LinearARD, its ablations, or the CPT / LongReD
// baselines), optional stage 2 light CPT, over the shared run phases (paper Sec. 3.2-3.4, Appendix B).
#include "linear_ard/train/restore_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "linear_ard/io/hf_config.h"              // defines: hf_rope_dict_from_json
#include "linear_ard/io/hf_folder.h"              // defines: hf_folder_load, hf_folder_*_check
#include "linear_ard/io/model_path.h"             // defines: model_path_resolve
#include "linear_ard/io/tokenizer.h"              // defines: tokenizer_load, tokenizer_file
#include "linear_ard/model/rope_compose.h"        // defines: rope_compose
#include "linear_ard/train/metrics_log.h"         // defines: progress_break
#include "linear_ard/train/restore_objective.h"   // defines: objective_ard, objective_lm, objective_longred
#include "run.h"                                  // defines: Run, run_progress_start
#include "run_loop.h"                             // defines: run_stages
#include "restore_validation.h"                   // defines: restore_validation_record
#include "run_result.h"                           // defines: run_result_write

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The student's config: the teacher's with its RoPE composed with the requested one
// (model::rope_compose, docs/rope.md). `student_rope` is validated (restore_config_load): a known
// scaled type with a factor >= 1.
model::ModelConfig student_config_make(const io::HfFolder& teacher, const json& student_rope) {
  try {
    return model::rope_compose(teacher.model_config, io::hf_rope_dict_from_json(student_rope, teacher.model_config.rope));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("config key 'student_rope': ") + e.what());
  }
}

// The plan of a restore run: the teacher folder, the student's RoPE, lengths and data.
RunPlan restore_plan(const RestoreConfig& config) {
  RunPlan plan = run_plan_begin(config, "restore");
  // A hub name becomes its snapshot folder in the local Hugging Face cache, which the resolved
  // config then records.
  try {
    plan.config.teacher = io::model_path_resolve(config.teacher);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("config key 'teacher': ") + e.what());
  }
  const RestoreConfig& c = plan.config;
  if (!fs::is_directory(c.teacher))
    throw std::invalid_argument("config key 'teacher': folder " + c.teacher + " is not a directory");
  plan.teacher = io::hf_folder_load(c.teacher, /*load_weights=*/true);
  io::hf_folder_weights_check(plan.teacher);
  plan.student_config = student_config_make(plan.teacher, c.student_rope);
  plan.mix = {c.pretrain.passkey_fraction, c.seed, c.pretrain.answer_weight, {}};
  plan.tokenizer = io::tokenizer_load(c.teacher);
  io::hf_folder_tokenizer_check(plan.teacher, *plan.tokenizer, io::tokenizer_file(c.teacher));
  run_plan_finish(plan);
  return plan;
}

StageLoss restore_stage1_loss(const RunPlan& plan, RunModel& m) {
  const Method method = plan.config.method;
  if (method == Method::kArd) return [&m](const model::Overrides& o, const torch::Tensor& ids) { return objective_ard(m.ctx, o, ids); };
  if (method == Method::kCpt)
    return [&m](const model::Overrides& o, const torch::Tensor& ids) { return objective_lm(m.ctx, o, ids, m.batch_weights); };
  return [&m](const model::Overrides& o, const torch::Tensor& ids) { return objective_longred(m.ctx, o, ids); };
}

void restore_header_print(const RunPlan& plan, const RunModel& m) {
  const RestoreConfig& c = plan.config;
  std::string layer_text;
  for (int64_t l : plan.layers) layer_text += (layer_text.empty() ? "" : ",") + std::to_string(l);
  std::printf("restore: %s -> %s (%s x%g), method %s, layers %s, trainable %s: %ld parameters in %zu tensors, %s %s\n",
              c.teacher.c_str(), c.output.c_str(), model::rope_type_name(plan.student_config.rope.type),
              plan.student_config.rope.factor.value_or(1.0), enum_name(c.method), layer_text.c_str(), enum_name(c.trainable),
              static_cast<long>(m.trainables->parameter_count()), m.trainables->names().size(), enum_name(c.device),
              enum_name(c.dtype));
}

}  // namespace

void restore_run(const RestoreConfig& config, const RunValidator& validator) {
  const auto run_start = std::chrono::steady_clock::now();
  Run run(restore_plan(config), run_start);
  run.evaluate = [&run, &validator](int64_t step, int64_t stage) {
    json record = restore_validation_record(run, validator, step, stage);
    run.outputs.append(record);
    return record;
  };
  restore_header_print(run.plan, run.model);
  run_progress_start(run);
  run_stages_build(run, restore_stage1_loss(run.plan, run.model));
  if (!run_stages(run) || !run.plan.main_rank) return;

  run_result_write(run);
  const json& before = run.progress.eval_before;
  const json& after = run.progress.eval_after;
  std::printf("restore: relation loss %.4f -> %.4f, logit KL %.4f -> %.4f, attention KL %.4f -> %.4f\n",
              before.value("relation_loss", 0.0), after.value("relation_loss", 0.0), before.value("logit_kl", 0.0),
              after.value("logit_kl", 0.0), before.value("attention_kl", 0.0), after.value("attention_kl", 0.0));
  const json chosen = run.selection.summary().at("chosen");
  std::printf("restore: validation KL to the native model %.4f -> %.4f, perplexity %.3f -> %.3f (native %.3f), the model's (step %ld)\n",
              before.value("val_kl", 0.0), chosen.value("val_kl", 0.0), before.value("val_ppl", 0.0),
              chosen.value("val_ppl", 0.0), chosen.value("native_ppl", 0.0), static_cast<long>(chosen.value("step", int64_t{0})));
}

}  // namespace linear_ard::train
