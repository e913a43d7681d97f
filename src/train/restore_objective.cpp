// restore_objective: relation distillation (+ ablations), LM loss and hidden-state cosine losses.
#include "linear_ard/train/restore_objective.h"

#include "linear_ard/model/llama_model.h"    // defines: model_forward
#include "linear_ard/model/lm_head_loss.h"  // defines: lm_head_loss
#include "linear_ard/ops/relation_kl.h"     // defines: relation_kl, relation_kl_row_mean
#include "linear_ard/train/step_profile.h"   // defines: PhaseScope
#include "linear_ard/train/teacher_overlap.h"  // defines: TeacherOverlap

namespace linear_ard::train {

namespace {

// The frozen teacher's forward, started beside whatever the caller does next (teacher_overlap.h).
TeacherOverlap teacher_start(const ObjectiveContext& ctx, const torch::Tensor& ids, const model::ForwardOptions& options) {
  return TeacherOverlap(ids.device(), ctx.overlap_teacher, [&ctx, &ids, options] {
    PhaseScope phase("teacher_forward");
    return model::model_forward(*ctx.weights, *ctx.teacher_rope, model::Overrides{}, ids, options);
  });
}

}  // namespace

ObjectiveContext objective_context_make(const RestoreConfig& config, const model::LlamaWeights& weights,
                                        const model::RopeTables& teacher_rope, const model::RopeTables& student_rope,
                                        std::vector<int64_t> layers) {
  ObjectiveContext ctx;
  ctx.weights = &weights;
  ctx.teacher_rope = &teacher_rope;
  ctx.student_rope = &student_rope;
  ctx.layers = std::move(layers);
  ctx.loss_options.causal = true;
  ctx.loss_options.lambda_q = config.lambda_q;
  ctx.loss_options.lambda_k = config.lambda_k;
  ctx.loss_options.lambda_v = config.lambda_v;
  ctx.loss_options.deterministic = config.deterministic;
  ctx.objective = config.objective;
  ctx.longred_max_skip = config.longred_max_skip;
  ctx.recompute_layers = config.checkpoint_layers;  // the same count (kRecomputeAll: all)
  ctx.overlap_teacher = config.overlap_teacher;
  return ctx;
}

ObjectiveLoss objective_ard(const ObjectiveContext& ctx, const model::Overrides& student, const torch::Tensor& ids) {
  const bool logits = ctx.objective.logit_kl > 0;
  model::ForwardOptions options;
  options.capture_qkv_layers = ctx.layers;
  // Nothing after the last distilled layer's QKV matters unless the logits are distilled too.
  if (!logits) options.stop_after_qkv_layer = ctx.layers.back();
  options.compute_logits = logits;
  TeacherOverlap teacher = teacher_start(ctx, ids, options);
  options.recompute_layers = ctx.recompute_layers;
  model::ModelOutputs s;
  {
    PhaseScope phase("student_forward");
    s = model::model_forward(*ctx.weights, *ctx.student_rope, student, ids, options);
  }
  const model::ModelOutputs t = teacher.get();
  PhaseScope phase("relation_loss");
  const bool attention = ctx.objective.relations == Relations::kAttention;
  ops::RelationLossOptions rel = ctx.loss_options;
  if (attention) rel.lambda_q = rel.lambda_k = 0;  // Q/Q and K/K give way to the attention map
  torch::Tensor total = torch::zeros({}, torch::TensorOptions(torch::kFloat).device(ids.device()));
  // The logged parts add up on the device and come to the host once, after the loop: a copy a layer
  // would make the host wait for every layer's kernels before it launches the next layer's.
  torch::Tensor per = torch::zeros({3}, torch::TensorOptions(torch::kDouble).device(ids.device()));
  torch::Tensor attention_sum = torch::zeros({}, per.options());
  for (int64_t l : ctx.layers) {
    const model::LayerQkv& tq = t.qkv.at(l);
    const model::LayerQkv& sq = s.qkv.at(l);
    if (rel.lambda_q + rel.lambda_k + rel.lambda_v > 0) {
      const ops::RelationLoss loss = ops::relation_loss({sq.q, sq.k, sq.v}, {tq.q, tq.k, tq.v}, rel);
      total = total + loss.total.to(torch::kFloat);
      per += loss.relation_losses.detach().to(torch::kDouble);
    }
    if (attention && ctx.loss_options.lambda_q > 0) {
      const auto kl = std::get<0>(ops::relation_kl(sq.q, sq.k, tq.q, tq.k, rel.key_mask, /*causal=*/true,
                                                   std::nullopt, std::nullopt, rel.deterministic));
      const auto a = ops::relation_kl_row_mean(kl, rel.key_mask).to(torch::kFloat);
      total = total + ctx.loss_options.lambda_q * a;
      attention_sum += a.detach().to(torch::kDouble);
    }
  }
  const double n_layers = static_cast<double>(ctx.layers.size());
  total = total / n_layers;
  per = per / n_layers;
  ObjectiveLoss out;
  if (attention) {
    out.parts["loss_attention"] = attention_sum / n_layers;
  } else {
    out.parts["loss_q"] = per[0];
    out.parts["loss_k"] = per[1];
  }
  out.parts["loss_v"] = per[2];

  if (logits) {
    const int64_t n = ids.size(1);
    const int64_t k = ctx.objective.last_k_positions > 0 ? std::min(ctx.objective.last_k_positions, n) : n;
    const double temp = ctx.objective.temperature;
    const auto log_pt = torch::log_softmax(t.logits.narrow(1, n - k, k).to(torch::kFloat) / temp, -1);
    const auto log_ps = torch::log_softmax(s.logits.narrow(1, n - k, k).to(torch::kFloat) / temp, -1);
    const auto kl = (log_pt.exp() * (log_pt - log_ps)).sum(-1).mean();
    out.parts["loss_logit_kl"] = kl.detach().to(torch::kDouble);
    total = total + ctx.objective.logit_kl * kl;
  }
  out.total = total;
  return out;
}

ObjectiveLoss objective_lm(const ObjectiveContext& ctx, const model::Overrides& student, const torch::Tensor& ids,
                           const torch::Tensor& weights) {
  model::ForwardOptions options;
  options.recompute_layers = ctx.recompute_layers;
  options.compute_logits = false;  // the LM head runs inside the chunked loss, never as [B, n, vocab] logits
  model::ModelOutputs s;
  {
    PhaseScope phase("student_forward");
    s = model::model_forward(*ctx.weights, *ctx.student_rope, student, ids, options);
  }
  PhaseScope phase("lm_loss");
  const int64_t n = ids.size(1);
  torch::Tensor w;
  if (weights.defined()) {
    TORCH_CHECK(weights.sizes() == ids.sizes(), "objective_lm: weights ", weights.sizes(), " do not match ids ",
                ids.sizes());
    w = weights.narrow(1, 1, n - 1);
  }
  const model::LmHeadLoss lm =
      model::lm_head_loss(*ctx.weights, student, s.last_hidden_state.narrow(1, 0, n - 1), ids.narrow(1, 1, n - 1), w);
  ObjectiveLoss out;
  out.total = lm.loss;
  // The plain next-token loss: the optimised one itself when no token weighs more (bit for bit).
  out.parts["loss_lm"] = (w.defined() ? lm.token_ce.mean() : lm.loss.detach()).to(torch::kDouble);
  return out;
}

ObjectiveLoss objective_longred(const ObjectiveContext& ctx, const model::Overrides& student, const torch::Tensor& ids) {
  model::ForwardOptions options;
  options.output_hidden_states = true;
  options.compute_logits = false;
  TeacherOverlap teacher = teacher_start(ctx, ids, options);
  options.recompute_layers = ctx.recompute_layers;
  if (ctx.longred_max_skip > 1) {
    const int64_t skip = torch::randint(1, ctx.longred_max_skip + 1, {1}, torch::kLong).item<int64_t>();
    options.position_ids = (torch::arange(ids.size(1), torch::kLong) * skip).unsqueeze(0).to(ids.device());
  }
  model::ModelOutputs s;
  {
    PhaseScope phase("student_forward");
    s = model::model_forward(*ctx.weights, *ctx.student_rope, student, ids, options);
  }
  const model::ModelOutputs t = teacher.get();
  PhaseScope phase("hidden_cos");
  torch::Tensor total = torch::zeros({}, torch::TensorOptions(torch::kFloat).device(ids.device()));
  for (int64_t l : ctx.layers) {
    const auto ht = t.hidden_states.at(l + 1).to(torch::kFloat);
    const auto hs = s.hidden_states.at(l + 1).to(torch::kFloat);
    total = total + (1 - torch::nn::functional::cosine_similarity(
                             hs, ht, torch::nn::functional::CosineSimilarityFuncOptions().dim(-1)))
                        .mean();
  }
  total = total / static_cast<double>(ctx.layers.size());
  ObjectiveLoss out;
  out.parts["loss_hidden_cos"] = total.detach().to(torch::kDouble);
  out.total = total;
  return out;
}

}  // namespace linear_ard::train
