// The restoration objective's gradient through the whole pipeline — model forward with trainable
// Q/K/V overrides under scaled RoPE, post-RoPE relations of the last layer, the relation-KL op —
// against central finite differences, in fp64 on a 2-layer model.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>
#include <string>
#include <vector>

#include "linear_ard/model/llama_model.h"    // defines: model_forward
#include "linear_ard/model/llama_weights.h"  // defines: llama_weights_random, Overrides
#include "linear_ard/model/rope.h"           // defines: rope_tables_init
#include "linear_ard/ops/relation_loss.h"    // defines: relation_loss

namespace {

using namespace linear_ard;

model::ModelConfig two_layer_config() {
  model::ModelConfig c;
  c.vocab_size = 61;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 16;
  c.rope.theta = 10000.0;
  return c;
}

TEST(PipelineGradient, RelationLossMatchesFiniteDifferences) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  torch::manual_seed(seed);
  const model::ModelConfig config = two_layer_config();
  // Weights at std 0.3 so relation rows are far from uniform and the loss has real curvature.
  const model::LlamaWeights weights =
      model::llama_weights_random(config, torch::kDouble, torch::kCPU, seed, 0.3);
  const model::RopeTables teacher_rope = model::rope_tables_init(config);
  model::RopeConfig scaled = config.rope;
  scaled.type = model::RopeType::kLinear;
  scaled.factor = 4.0;
  const model::RopeTables student_rope = model::rope_tables_init(config, scaled);

  // The trainer's default trainable set: every layer's Q/K/V projection.
  model::Overrides overrides;
  std::vector<std::string> names;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
      const std::string name =
          "model.layers." + std::to_string(layer) + ".self_attn." + proj + ".weight";
      overrides.replace[name] = weights.tensors.at(name).clone().requires_grad_(true);
      names.push_back(name);
    }
  }
  const torch::Tensor ids = torch::randint(config.vocab_size, {2, 11}, torch::kLong);
  model::ForwardOptions options;
  options.stop_after_qkv_layer = config.num_hidden_layers - 1;
  model::LayerQkv teacher;
  {
    torch::NoGradGuard no_grad;
    teacher = model::model_forward(weights, teacher_rope, {}, ids, options)
                  .qkv.at(config.num_hidden_layers - 1);
  }
  const auto loss_of = [&] {
    const model::LayerQkv s = model::model_forward(weights, student_rope, overrides, ids, options)
                                  .qkv.at(config.num_hidden_layers - 1);
    ops::RelationLossOptions o;
    o.causal = true;
    return ops::relation_loss({s.q, s.k, s.v}, {teacher.q, teacher.k, teacher.v}, o).total;
  };

  const torch::Tensor loss = loss_of();
  ASSERT_GT(loss.item<double>(), 1e-4) << "the scaled student must differ from the teacher";
  loss.backward();

  std::mt19937_64 rng(seed);
  const double eps = 1e-5;
  for (const std::string& name : names) {
    torch::Tensor w = overrides.replace.at(name);
    const torch::Tensor grad = w.grad().flatten();
    ASSERT_TRUE(grad.defined()) << name;
    for (int probe = 0; probe < 3; ++probe) {
      const int64_t i = static_cast<int64_t>(rng() % static_cast<uint64_t>(w.numel()));
      double up, down;
      {
        torch::NoGradGuard no_grad;
        torch::Tensor flat = w.view({-1});
        const double original = flat[i].item<double>();
        flat[i] = original + eps;
        up = loss_of().item<double>();
        flat[i] = original - eps;
        down = loss_of().item<double>();
        flat[i] = original;
      }
      const double numeric = (up - down) / (2 * eps);
      const double analytic = grad[i].item<double>();
      // fp64 central differences: truncation ~eps^2 and rounding ~1e-16/eps, both far below this.
      EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
          << name << " element " << i;
    }
  }
}

}  // namespace
