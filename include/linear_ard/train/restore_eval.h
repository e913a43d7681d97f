// restore_eval: the held-out diagnostics of a restore run (paper Appendix L, "Attention-Logit
// Coupling"): the optimised relation loss and the monitored, not optimised, output-logit KL and
// attention-map KL between teacher and student.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"
#include "linear_ard/ops/relation_loss.h"

namespace linear_ard::train {

struct RestoreEval {
  double relation_loss = 0;   // sum_r lambda_r L_r, mean over the distilled layers
  double loss_q = 0, loss_k = 0, loss_v = 0;
  double logit_kl = 0;        // mean over positions of KL(softmax teacher || softmax student)
  double attention_kl = 0;    // relation KL of (Q, K), causal, mean over the distilled layers
};

// Full forwards of teacher (shared weights, no overrides) and student (`student_overrides`) on
// ids [B, n], without gradients.
RestoreEval restore_evaluate(const model::LlamaWeights& weights, const model::RopeTables& teacher_rope,
                             const model::RopeTables& student_rope,
                             const model::Overrides& student_overrides, const torch::Tensor& ids,
                             const std::vector<int64_t>& layers, const ops::RelationLossOptions& loss_options);

}  // namespace linear_ard::train
