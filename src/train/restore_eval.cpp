// restore_eval: held-out relation loss, output-logit KL and attention-map KL.
#include "linear_ard/train/restore_eval.h"

#include "linear_ard/model/llama_model.h"  // defines: model_forward
#include "linear_ard/ops/relation_kl.h"     // defines: relation_kl

namespace linear_ard::train {

RestoreEval restore_evaluate(const model::LlamaWeights& weights, const model::RopeTables& teacher_rope,
                             const model::RopeTables& student_rope,
                             const model::Overrides& student_overrides, const torch::Tensor& ids,
                             const std::vector<int64_t>& layers, const ops::RelationLossOptions& loss_options) {
  torch::NoGradGuard no_grad;
  model::ForwardOptions options;
  options.capture_qkv_layers = layers;
  const model::ModelOutputs t = model::model_forward(weights, teacher_rope, model::Overrides{}, ids, options);
  const model::ModelOutputs s = model::model_forward(weights, student_rope, student_overrides, ids, options);

  RestoreEval e;
  const double n_layers = static_cast<double>(layers.size());
  for (int64_t l : layers) {
    const model::LayerQkv& tq = t.qkv.at(l);
    const model::LayerQkv& sq = s.qkv.at(l);
    const ops::RelationLoss loss = ops::relation_loss({sq.q, sq.k, sq.v}, {tq.q, tq.k, tq.v}, loss_options);
    e.relation_loss += loss.total.item<double>() / n_layers;
    const auto per = loss.relation_losses.to(torch::kCPU, torch::kDouble);
    e.loss_q += per[0].item<double>() / n_layers;
    e.loss_k += per[1].item<double>() / n_layers;
    e.loss_v += per[2].item<double>() / n_layers;
    // The attention-map ablation's quantity: softmax(Q K^T / sqrt(d)) rows; the op repeats K for GQA.
    const auto kl = std::get<0>(ops::relation_kl(sq.q, sq.k, tq.q, tq.k, loss_options.key_mask, /*causal=*/true));
    e.attention_kl += ops::relation_kl_row_mean(kl, loss_options.key_mask).item<double>() / n_layers;
  }

  // KL(teacher || student) per position in fp32, then the mean over batch and positions.
  const auto log_pt = torch::log_softmax(t.logits.to(torch::kFloat), -1);
  const auto log_ps = torch::log_softmax(s.logits.to(torch::kFloat), -1);
  e.logit_kl = (log_pt.exp() * (log_pt - log_ps)).sum(-1).mean().item<double>();
  return e;
}

}  // namespace linear_ard::train
