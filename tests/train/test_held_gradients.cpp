// Gradients held in the model dtype (train/held_gradients.h) against the fp32 gradients on the
// parameters they replace: backward holds one bf16 gradient a unit and gives the parameters none;
// restore_step then makes the same updates (bit for bit without clipping; with clipping, the norm
// is summed in another order, so to fp32 rounding), for the q/k/v masters and for LoRA.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "../model/tiny_config.h"               // defines: tiny_config
#include "linear_ard/model/llama_model.h"       // defines: model_forward
#include "linear_ard/model/rope.h"              // defines: rope_tables_init
#include "linear_ard/train/fused_adamw.h"       // defines: FusedAdamW
#include "linear_ard/train/restore_step.h"      // defines: restore_step
#include "linear_ard/train/trainable_set.h"     // defines: TrainableSet

namespace {

using namespace linear_ard;

struct Model {
  model::LlamaWeights weights = model::llama_weights_random(model::tiny_config(), torch::kBFloat16, torch::kCPU, 21);
  model::RopeTables rope = model::rope_tables_init(weights.config);
};

train::TrainableSet trainables_make(const Model& m, train::Trainable mode) {
  torch::manual_seed(4);  // LoRA's A from torch's generator: the same in both sets
  train::LoraConfig lora;
  lora.rank = 3;
  return train::TrainableSet(mode, lora, m.weights.tensors, m.weights, m.weights.config.num_hidden_layers - 1,
                             torch::kCPU);
}

// A loss that reads every trainable: the logits' mean square and the last layer's Q.
train::StageLoss loss_of(const Model& m) {
  return [&m](const model::Overrides& o, const torch::Tensor& ids) {
    model::ForwardOptions options;
    options.capture_qkv_layers = {-1};
    const model::ModelOutputs out = model::model_forward(m.weights, m.rope, o, ids, options);
    return train::ObjectiveLoss{out.logits.to(torch::kFloat).square().mean() + out.qkv.begin()->second.q.to(torch::kFloat).mean(), {}};
  };
}

TEST(HeldGradients, BackwardHoldsOneModelDtypeGradientAUnit) {
  const Model m;
  for (const auto mode : {train::Trainable::kQkv, train::Trainable::kLoraQkv}) {
    train::TrainableSet held = trainables_make(m, mode), plain = trainables_make(m, mode);
    if (mode == train::Trainable::kLoraQkv)  // B = 0 would give A no gradient
      for (auto* set : {&held, &plain}) {
        torch::NoGradGuard no_grad;
        for (size_t i = 1; i < set->parameters().size(); i += 2) set->parameters()[i].fill_(0.01);
      }
    const auto ids = torch::randint(0, 97, {2, 9}, torch::kLong);
    loss_of(m)(held.overrides(torch::kBFloat16, true, /*hold=*/true), ids).total.backward();
    loss_of(m)(plain.overrides(torch::kBFloat16, true), ids).total.backward();
    int64_t numel = 0;
    for (const auto& g : held.held().held()) {
      EXPECT_EQ(g.scalar_type(), torch::kBFloat16);
      numel += g.numel();
    }
    EXPECT_EQ(numel, held.parameter_count());
    std::vector<torch::Tensor> flat;
    for (size_t i = 0; i < held.parameters().size(); ++i) {
      EXPECT_FALSE(held.parameters()[i].grad().defined()) << held.names()[i];
      flat.push_back(plain.parameters()[i].grad().reshape(-1));
    }
    // The fp32 gradients are the held ones cast up, element for element (units in parameter order).
    EXPECT_TRUE(torch::equal(torch::cat(held.held().held()).to(torch::kFloat), torch::cat(flat)));
  }
}

// One optimizer step a unit or one for every unit: the same parameters and moments, bit for bit.
TEST(HeldGradients, ApplyingInStepsOfAnySizeMakesTheSameUpdate) {
  const Model m;
  const auto ids = torch::randint(0, 97, {2, 9}, torch::kLong);
  std::vector<torch::Tensor> after[2];
  for (const int64_t step_bytes : {int64_t{1}, train::HeldGradients::kApplyBytes}) {
    train::TrainableSet set = trainables_make(m, train::Trainable::kQkv);
    train::FusedAdamW optimizer(set.parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    for (int step = 0; step < 2; ++step) {
      loss_of(m)(set.overrides(torch::kBFloat16, true, /*hold=*/true), ids).total.backward();
      ASSERT_GT(set.held().held().size(), 1u);
      set.held().apply(optimizer, 0.5, step_bytes);
      EXPECT_TRUE(set.held().held().empty());
    }
    auto& out = after[step_bytes == 1 ? 0 : 1];
    for (const auto& p : set.parameters()) {
      EXPECT_FALSE(p.grad().defined());
      out.push_back(p.detach().clone());
      const auto& state = static_cast<torch::optim::AdamWParamState&>(
          *optimizer.state().at(p.unsafeGetTensorImpl()));
      EXPECT_EQ(state.step(), 2);
      out.push_back(state.exp_avg_sq().clone());
    }
  }
  ASSERT_EQ(after[0].size(), after[1].size());
  for (size_t i = 0; i < after[0].size(); ++i) EXPECT_TRUE(torch::equal(after[0][i], after[1][i])) << i;
}

TEST(HeldGradients, RestoreStepMakesTheSameUpdates) {
  const Model m;
  for (const auto mode : {train::Trainable::kQkv, train::Trainable::kLoraQkv})
    for (const double clip : {0.0, 1e-3}) {
      std::vector<std::vector<torch::Tensor>> after;
      std::vector<double> norms;
      for (const bool hold : {true, false}) {
        train::TrainableSet set = trainables_make(m, mode);
        train::FusedAdamW optimizer(set.parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
        torch::manual_seed(9);
        const std::function<torch::Tensor()> batch = [] { return torch::randint(0, 97, {2, 9}, torch::kLong); };
        train::StepSettings s;
        s.lr = 1e-2;
        s.clip_grad_norm = clip;
        s.dtype = torch::kBFloat16;
        s.hold_gradients = hold;
        for (int step = 0; step < 3; ++step) norms.push_back(train::restore_step(loss_of(m), set, optimizer, batch, s).grad_norm);
        for (const auto& p : set.parameters()) EXPECT_FALSE(p.grad().defined() && hold);
        EXPECT_TRUE(set.held().held().empty());
        after.emplace_back();
        for (const auto& p : set.parameters()) after.back().push_back(p.detach().clone());
      }
      for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(norms[k], norms[k + 3], 1e-6 * norms[k + 3]) << k;
      for (size_t i = 0; i < after[0].size(); ++i) {
        ASSERT_FALSE(torch::equal(after[1][i], trainables_make(m, mode).parameters()[i])) << "not trained: " << i;
        if (clip == 0.0)
          EXPECT_TRUE(torch::equal(after[0][i], after[1][i])) << i;
        else
          EXPECT_LT((after[0][i] - after[1][i]).abs().max().item<double>(), 1e-6) << i;
      }
    }
}

}  // namespace
