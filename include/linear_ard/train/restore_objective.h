// restore_objective: the per-batch training losses of a restore run: LinearARD's relation
// distillation and its ablations (paper Sec. 3.4, Appendices A, D, E), the LM loss of CPT and of
// stage 2, and the LongReD-style hidden-state cosine baseline.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"
#include "linear_ard/ops/relation_loss.h"
#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// What every objective reads: shared weights, both RoPEs and the settings of the run.
struct ObjectiveContext {
  const model::LlamaWeights* weights = nullptr;
  const model::RopeTables* teacher_rope = nullptr;
  const model::RopeTables* student_rope = nullptr;
  std::vector<int64_t> layers;             // non-negative, ascending
  ops::RelationLossOptions loss_options;   // causal, lambda_q/k/v
  ObjectiveConfig objective;
  int64_t longred_max_skip = 1;
  int64_t recompute_layers = 0;            // model::ForwardOptions::recompute_layers
  bool overlap_teacher = true;             // the teacher's forward beside the student's (teacher_overlap.h)
};

// The context of run `config` (lambdas, deterministic, objective, LongReD skip, checkpoint_layers as
// recompute_layers, overlap_teacher) over `weights`
// and both RoPEs for the resolved distilled `layers`; the references must outlive it.
ObjectiveContext objective_context_make(const RestoreConfig& config, const model::LlamaWeights& weights,
                                        const model::RopeTables& teacher_rope, const model::RopeTables& student_rope,
                                        std::vector<int64_t> layers);

// The loss to backpropagate and its parts for the metrics (loss_q, loss_k, loss_v or
// loss_attention, loss_v; loss_logit_kl; loss_lm; loss_hidden_cos). The parts are detached fp64
// scalars on the loss's device, never read here: the step reads them with the gradient norm, after
// the backward is queued, so the host does not wait for the forward before launching it.
struct ObjectiveLoss {
  torch::Tensor total;
  std::map<std::string, torch::Tensor> parts;
};

// LinearARD: relations (Q/Q+K/K+V/V, or attention map (Q,K) weighted by lambda_q + V/V) averaged
// over ctx.layers, plus objective.logit_kl * KL(softmax(z_t/T) || softmax(z_s/T)) averaged over the
// (last k) positions when logit_kl > 0 (then both forwards run to the logits).
ObjectiveLoss objective_ard(const ObjectiveContext& ctx, const model::Overrides& student, const torch::Tensor& ids);

// Next-token cross-entropy of the student (scaled RoPE) on ids [B, n], mean over the B (n - 1)
// targets. With `weights` [B, n] (block_mix's: weights[b, i] weighs predicting ids[b, i], column 0
// unused) the loss to backpropagate is the weighted mean sum w_i CE_i / sum w_i; undefined weights
// take the plain mean. parts["loss_lm"] is the plain mean either way, comparable across weightings.
// The LM head and the loss run chunked (model/lm_head_loss.h): no [B, n, vocab] logits are made.
ObjectiveLoss objective_lm(const ObjectiveContext& ctx, const model::Overrides& student, const torch::Tensor& ids,
                           const torch::Tensor& weights = {});

// LongReD-style: mean over ctx.layers of the mean over tokens of 1 - cos(h_t, h_s), h the layer's
// output hidden state (the last layer's after the final norm, HF's convention). With
// longred_max_skip > 1 the student reads position ids arange(n) * s, s ~ U{1..max_skip} drawn from
// torch's generator per batch, while the teacher reads arange(n).
ObjectiveLoss objective_longred(const ObjectiveContext& ctx, const model::Overrides& student, const torch::Tensor& ids);

}  // namespace linear_ard::train
