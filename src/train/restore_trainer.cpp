// restore_trainer: the restore driver: stage 1 (LinearARD, its ablations, or the CPT / LongReD
// baselines), optional stage 2 light CPT, over the shared run phases (paper Sec. 3.2-3.4, Appendix B).
#include "linear_ard/train/restore_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "linear_ard/io/hf_config.h"              // defines: hf_config_from_json
#include "linear_ard/io/hf_folder.h"              // defines: hf_folder_load, hf_folder_*_check
#include "linear_ard/io/tokenizer.h"              // defines: tokenizer_load, tokenizer_file
#include "linear_ard/train/metrics_log.h"         // defines: progress_break
#include "linear_ard/train/restore_eval.h"        // defines: restore_evaluate
#include "linear_ard/train/restore_objective.h"   // defines: objective_ard, objective_lm, objective_longred
#include "run.h"                                  // defines: Run, run_progress_start
#include "run_loop.h"                             // defines: run_stages
#include "run_result.h"                           // defines: run_result_write

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The student's config.json: the teacher's with the requested rope_scaling and, as HF expects for a
// scaled model, max_position_embeddings = native x factor. The rope dict names the native length
// as original_max_position_embeddings (yarn, llama3 and longrope compute with it; for linear it
// records what was scaled); dynamic NTK keeps the native max_position_embeddings, its threshold.
// `student_rope` is validated (restore_config_load): a known scaled type with a factor >= 1.
model::ModelConfig student_config_make(const io::HfFolder& teacher, const json& student_rope) {
  const model::ModelConfig& t = teacher.model_config;
  json rope = student_rope;
  const model::RopeType type = model::rope_type_from_name(rope.value("rope_type", rope.value("type", "")));
  if (!rope.contains("original_max_position_embeddings"))
    rope["original_max_position_embeddings"] = t.max_position_embeddings;

  json j = teacher.config;
  j.erase("rope_parameters");
  j["rope_theta"] = t.rope.theta;
  if (t.rope.partial_rotary_factor) j["partial_rotary_factor"] = *t.rope.partial_rotary_factor;
  j["rope_scaling"] = rope;
  if (type != model::RopeType::kDynamic)
    j["max_position_embeddings"] = static_cast<int64_t>(std::llround(t.max_position_embeddings * rope["factor"].get<double>()));
  try {
    return io::hf_config_from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("config key 'student_rope': ") + e.what());
  }
}

// The teacher is the model at its native RoPE: the student's RoPE replaces the teacher's, and a
// scaled teacher would distil its scaled relations under a config claiming native x factor
// positions over a context that was already extended (docs/restore.md, "Teachers").
void teacher_native_check(const io::HfFolder& teacher) {
  const model::RopeConfig& rope = teacher.model_config.rope;
  if (rope.type == model::RopeType::kDefault) return;
  char factor[32] = "";
  if (rope.factor) std::snprintf(factor, sizeof factor, ", factor %g", *rope.factor);
  throw std::invalid_argument("teacher " + teacher.path + " is already RoPE-scaled (config.json: rope_type " +
                              model::rope_type_name(rope.type) + factor +
                              "): restore starts from the native-RoPE model; give the checkpoint before scaling");
}

// The plan of a restore run: the teacher folder, the student's RoPE, lengths and data.
RunPlan restore_plan(const RestoreConfig& config) {
  RunPlan plan = run_plan_begin(config, "restore");
  const RestoreConfig& c = plan.config;
  if (!fs::is_directory(c.teacher))
    throw std::invalid_argument("config key 'teacher': folder " + c.teacher + " does not exist");
  plan.teacher = io::hf_folder_load(c.teacher, /*load_weights=*/true);
  io::hf_folder_weights_check(plan.teacher);
  teacher_native_check(plan.teacher);
  plan.student_config = student_config_make(plan.teacher, c.student_rope);
  plan.mix = {c.pretrain.passkey_fraction, c.seed, c.pretrain.answer_weight, {}};
  plan.tokenizer = io::tokenizer_load(c.teacher);
  io::hf_folder_tokenizer_check(plan.teacher, *plan.tokenizer, io::tokenizer_file(c.teacher));
  run_plan_finish(plan);
  return plan;
}

// Held-out relation losses and the monitored logit / attention-map KL at `step`.
json restore_eval_record(const RunPlan& plan, const RunModel& m, int64_t step) {
  const RestoreEval e = restore_evaluate(m.weights, m.teacher_rope, m.student_rope,
                                         m.trainables->overrides(plan.dtype, /*training=*/false), m.eval_ids,
                                         plan.layers, m.ctx.loss_options);
  progress_break();
  std::printf("eval step %ld | relation loss %.4f (q %.4f k %.4f v %.4f) | logit KL %.4f | attention KL %.4f\n",
              static_cast<long>(step), e.relation_loss, e.loss_q, e.loss_k, e.loss_v, e.logit_kl, e.attention_kl);
  std::fflush(stdout);
  return {{"relation_loss", e.relation_loss}, {"loss_q", e.loss_q}, {"loss_k", e.loss_k}, {"loss_v", e.loss_v},
          {"logit_kl", e.logit_kl}, {"attention_kl", e.attention_kl}, {"step", step}, {"eval", true}};
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

void restore_run(const RestoreConfig& config) {
  const auto run_start = std::chrono::steady_clock::now();
  Run run(restore_plan(config), run_start);
  run.evaluate = [&run](int64_t step) {
    json record = restore_eval_record(run.plan, run.model, step);
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
}

}  // namespace linear_ard::train
