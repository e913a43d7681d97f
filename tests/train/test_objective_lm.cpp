// objective_lm's weighted next-token loss (pretraining's answer weights) against a by-hand fp64
// computation on the same logits: sum_i w_i CE_i / sum_i w_i, the weight of token i+1 on predicting
// it; without weights, the plain mean as before.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "linear_ard/model/llama_model.h"        // defines: model_forward
#include "linear_ard/model/llama_weights.h"      // defines: llama_weights_random
#include "linear_ard/model/rope.h"               // defines: rope_tables_init
#include "linear_ard/train/restore_objective.h"  // defines: objective_lm, ObjectiveContext

namespace {

using namespace linear_ard;

struct TinyLm {
  model::ModelConfig config;
  model::LlamaWeights weights;
  model::RopeTables rope;
  train::ObjectiveContext ctx;
};

// A 2-layer fp32 model with weights at std 0.3, so the per-token losses differ widely.
TinyLm tiny_lm() {
  TinyLm m;
  m.config.vocab_size = 67;
  m.config.hidden_size = 32;
  m.config.intermediate_size = 48;
  m.config.num_hidden_layers = 2;
  m.config.num_attention_heads = 4;
  m.config.num_key_value_heads = 2;
  m.config.max_position_embeddings = 32;
  m.config.rope.theta = 10000.0;
  m.weights = model::llama_weights_random(m.config, torch::kFloat, torch::kCPU, /*seed=*/3, 0.3);
  m.rope = model::rope_tables_init(m.config);
  m.ctx.weights = &m.weights;
  m.ctx.teacher_rope = &m.rope;
  m.ctx.student_rope = &m.rope;
  return m;
}

torch::Tensor logits_of(const TinyLm& m, const torch::Tensor& ids) {
  torch::NoGradGuard no_grad;
  return model::model_forward(m.weights, m.rope, {}, ids, {}).logits;
}

// sum_{b, i >= 1} w[b, i] * (-log softmax(logits[b, i-1])[ids[b, i]]) / sum w[b, i], in fp64.
double weighted_nll_reference(const torch::Tensor& logits, const torch::Tensor& ids, const torch::Tensor& w) {
  const auto lp = logits.to(torch::kDouble).log_softmax(-1);
  const auto lpa = lp.accessor<double, 3>();
  const auto ida = ids.accessor<int64_t, 2>();
  const auto wa = w.to(torch::kDouble).contiguous();
  const auto wacc = wa.accessor<double, 2>();
  double num = 0, den = 0;
  for (int64_t b = 0; b < ids.size(0); ++b) {
    for (int64_t i = 1; i < ids.size(1); ++i) {
      num += wacc[b][i] * -lpa[b][i - 1][ida[b][i]];
      den += wacc[b][i];
    }
  }
  return num / den;
}

TEST(ObjectiveLm, WeightedLossMatchesByHandReference) {
  TinyLm m = tiny_lm();
  torch::manual_seed(5);
  const auto ids = torch::randint(m.config.vocab_size, {3, 29}, torch::kLong);
  const torch::Tensor logits = logits_of(m, ids);
  // Answer-like weights: a run of heavy tokens at the end of one block, one in another, none in the
  // third; column 0 (never a target) gets a weight that must be ignored.
  auto w = torch::ones({3, 29}, torch::kFloat);
  w[0].narrow(0, 22, 7).fill_(30.0);
  w[1][5] = 0.0;
  w[1][17] = 10.0;
  w.select(1, 0).fill_(1000.0);
  const train::ObjectiveLoss weighted = train::objective_lm(m.ctx, {}, ids, w);
  const double expected = weighted_nll_reference(logits, ids, w);
  EXPECT_NEAR(weighted.total.item<double>(), expected, 1e-5 * expected);
  // loss_lm stays the plain mean, comparable with unweighted runs.
  const double plain = weighted_nll_reference(logits, ids, torch::ones({3, 29}));
  EXPECT_NEAR(weighted.parts.at("loss_lm").item<double>(), plain, 1e-5 * plain);
  EXPECT_GT(std::abs(expected - plain), 1e-3) << "the weights must change the loss";
}

TEST(ObjectiveLm, NoWeightsIsThePlainMeanAndOnesMatchIt) {
  TinyLm m = tiny_lm();
  torch::manual_seed(7);
  const auto ids = torch::randint(m.config.vocab_size, {2, 31}, torch::kLong);
  const torch::Tensor logits = logits_of(m, ids);
  const train::ObjectiveLoss none = train::objective_lm(m.ctx, {}, ids);
  // The unweighted path is torch's cross-entropy of the whole logits; the chunked LM-head loss sums
  // the same terms in another order, so they agree to fp32 rounding (a few ulps of the mean).
  const auto before = torch::nn::functional::cross_entropy(logits.narrow(1, 0, 30).reshape({-1, m.config.vocab_size}),
                                                           ids.narrow(1, 1, 30).reshape({-1}));
  EXPECT_NEAR(none.total.item<double>(), before.item<double>(), 1e-6 * before.item<double>());
  EXPECT_NEAR(none.parts.at("loss_lm").item<double>(), none.total.item<double>(), 1e-6 * none.total.item<double>());
  const train::ObjectiveLoss ones = train::objective_lm(m.ctx, {}, ids, torch::ones({2, 31}));
  EXPECT_NEAR(ones.total.item<double>(), none.total.item<double>(), 1e-6 * none.total.item<double>());
  EXPECT_NEAR(weighted_nll_reference(logits, ids, torch::ones({2, 31})), none.total.item<double>(),
              1e-5 * none.total.item<double>());
}

TEST(ObjectiveLm, WeightedGradientIsTheWeightedSumOfPerTokenGradients) {
  TinyLm m = tiny_lm();
  torch::manual_seed(11);
  const auto ids = torch::randint(m.config.vocab_size, {1, 13}, torch::kLong);
  const std::string name = "model.layers.1.self_attn.v_proj.weight";
  model::Overrides o;
  o.replace[name] = m.weights.tensors.at(name).clone().requires_grad_(true);
  auto w = torch::ones({1, 13});
  w[0].narrow(0, 9, 4).fill_(20.0);
  train::objective_lm(m.ctx, o, ids, w).total.backward();
  const auto grad = o.replace[name].grad().clone();
  // The same gradient from the per-token losses, weighted and normalised by hand.
  o.replace[name].mutable_grad().reset();
  const auto logits = model::model_forward(m.weights, m.rope, o, ids, {}).logits;
  const auto nll = -logits[0].narrow(0, 0, 12).log_softmax(-1).gather(1, ids[0].narrow(0, 1, 12).unsqueeze(1)).squeeze(1);
  const auto wt = w[0].narrow(0, 1, 12);
  ((nll * wt).sum() / wt.sum()).backward();
  EXPECT_TRUE(torch::allclose(grad, o.replace[name].grad(), 1e-4, 1e-6));
}

TEST(ObjectiveLm, MismatchedWeightsAreRefused) {
  TinyLm m = tiny_lm();
  const auto ids = torch::randint(m.config.vocab_size, {2, 9}, torch::kLong);
  EXPECT_THROW(train::objective_lm(m.ctx, {}, ids, torch::ones({2, 8})), c10::Error);
}

}  // namespace
