// restore_validation: a restore run's validation record: the relation diagnostics, the KL to the
// native model with both perplexities, and the injected validator's passkey retrieval.
#include "restore_validation.h"

#include <cstdio>

#include "linear_ard/train/metrics_log.h"   // defines: progress_break, memory_cache_release, memory_now
#include "linear_ard/train/native_kl.h"     // defines: native_kl_evaluate
#include "linear_ard/train/restore_eval.h"  // defines: restore_evaluate

namespace linear_ard::train {
namespace {

using nlohmann::json;

// The relation diagnostics (relation losses, the monitored logit and attention-map KL) on the first
// validation block.
json restore_diagnostics(const RunPlan& plan, const RunModel& m, const model::Overrides& overrides) {
  const RestoreEval e = restore_evaluate(m.weights, m.teacher_rope, m.student_rope, overrides, m.eval_ids.narrow(0, 0, 1),
                                         plan.layers, m.ctx.loss_options);
  return {{"relation_loss", e.relation_loss}, {"loss_q", e.loss_q}, {"loss_k", e.loss_k}, {"loss_v", e.loss_v},
          {"logit_kl", e.logit_kl}, {"attention_kl", e.attention_kl}};
}

// The restoration metric on every validation block: KL(native || student) and both perplexities.
json restore_native_kl(const RunPlan& plan, const RunModel& m, const model::Overrides& overrides) {
  const NativeKl k = native_kl_evaluate(m.weights, m.teacher_rope, m.student_rope, overrides, plan.val_blocks,
                                        plan.config.batch_size, plan.device);
  return {{"val_kl", k.kl}, {"val_ppl", k.ppl}, {"native_ppl", k.native_ppl}, {"val_tokens", k.tokens}};
}

// The record as one line of the run's log.
void validation_print(const json& r) {
  progress_break();
  std::printf("eval step %ld (stage %ld) | val KL %.4f | val PPL %.3f (native %.3f) | relation loss %.4f (q %.4f k %.4f v %.4f) "
              "| logit KL %.4f | attention KL %.4f",
              static_cast<long>(r.at("step").get<int64_t>()), static_cast<long>(r.at("stage").get<int64_t>()),
              r.at("val_kl").get<double>(), r.at("val_ppl").get<double>(), r.at("native_ppl").get<double>(),
              r.at("relation_loss").get<double>(), r.at("loss_q").get<double>(), r.at("loss_k").get<double>(),
              r.at("loss_v").get<double>(), r.at("logit_kl").get<double>(), r.at("attention_kl").get<double>());
  if (r.contains("passkey"))
    for (const auto& [length, accuracy] : r.at("passkey").items())
      std::printf(" | passkey@%s %.0f%%", length.c_str(), 100 * accuracy.get<double>());
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

json restore_validation_record(const Run& run, const RunValidator& validator, int64_t step, int64_t stage) {
  const RunPlan& plan = run.plan;
  const RunModel& m = run.model;
  torch::NoGradGuard no_grad;  // the validator's forwards too: the overrides are cast from trainable masters
  const model::Overrides overrides = m.trainables->overrides(plan.dtype, /*training=*/false);
  json record = {{"step", step}, {"stage", stage}, {"eval", true}, {"tokens", run.progress.tokens}};
  record.update(restore_diagnostics(plan, m, overrides));
  record.update(restore_native_kl(plan, m, overrides));
  if (validator && !plan.passkey_lengths.empty())
    record.update(validator({m.weights, plan.student_config, m.student_rope, overrides, plan.device, plan.dtype,
                             plan.config.teacher, plan.passkey_lengths, plan.config.val_passkey, step, stage}));
  // The passkey's decode graphs leave private memory pools the training steps cannot reuse: handed
  // back here, and the memory after each validation recorded, so that growth across validations shows.
  memory_cache_release(plan.device);
  const MemoryNow memory = memory_now(plan.device);
  record["memory_bytes"] = memory.allocated;
  record["memory_reserved_bytes"] = memory.reserved;
  validation_print(record);
  return record;
}

}  // namespace linear_ard::train
