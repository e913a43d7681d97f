// pretrain_eval: held-out LM loss through the CPT objective, without gradients.
#include "linear_ard/train/pretrain_eval.h"

#include <cmath>

#include "linear_ard/train/restore_objective.h"  // defines: objective_lm

namespace linear_ard::train {

PretrainEval pretrain_evaluate(const model::LlamaWeights& weights, const model::RopeTables& rope,
                               const model::Overrides& overrides, const torch::Tensor& ids) {
  torch::NoGradGuard no_grad;
  ObjectiveContext ctx;
  ctx.weights = &weights;
  ctx.teacher_rope = &rope;
  ctx.student_rope = &rope;
  double sum = 0;
  for (int64_t b = 0; b < ids.size(0); ++b) sum += objective_lm(ctx, overrides, ids.narrow(0, b, 1)).parts.at("loss_lm").item<double>();
  PretrainEval e;
  e.loss_lm = sum / static_cast<double>(ids.size(0));
  e.perplexity = std::exp(e.loss_lm);
  return e;
}

}  // namespace linear_ard::train
