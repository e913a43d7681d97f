// weights_group: each layer's q/k/v and gate/up packed into one storage at load, and the one-GEMM
// linear over a group against one weights_linear per module (values and gradients).
#include <gtest/gtest.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/weights_group.h"  // defines: weights_linear_group
#include "linear_ard/model/weights_pack.h"   // defines: weights_groups, weights_group_pack
#include "tiny_config.h"                     // defines: tiny_config

namespace {

using namespace linear_ard::model;

const std::vector<std::string> kQkv = {"model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.k_proj",
                                       "model.layers.1.self_attn.v_proj"};

// Random weights with q/k/v biases (Qwen2-style), loaded through llama_weights_from_map.
LlamaWeights qwen_like_weights() {
  ModelConfig c = tiny_config();
  c.attention_bias = true;
  torch::manual_seed(3);
  std::map<std::string, torch::Tensor> tensors = llama_weights_random(c, torch::kFloat, torch::kCPU, 5).tensors;
  for (auto& [name, t] : tensors)
    if (name.find(".bias") != std::string::npos) t = torch::randn(t.sizes());  // separate, non-zero
  return llama_weights_from_map(c, tensors);
}

torch::Tensor separate(const LlamaWeights& w, const Overrides& o, const std::vector<std::string>& modules,
                       const torch::Tensor& x) {
  std::vector<torch::Tensor> outs;
  for (const auto& m : modules) outs.push_back(weights_linear(w, o, m, x));
  return torch::cat(outs, -1);
}

TEST(WeightsGroup, LoadPacksEachGroupIntoOneStorageKeepingValues) {
  ModelConfig c = tiny_config();
  c.attention_bias = true;
  std::map<std::string, torch::Tensor> original = llama_weights_random(c, torch::kFloat, torch::kCPU, 7).tensors;
  for (auto& [name, t] : original) t = t.clone();  // each its own storage
  const LlamaWeights w = llama_weights_from_map(c, original);
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer)
    for (const auto& modules : weights_groups(layer))
      for (const char* part : {".weight", ".bias"}) {
        if (!w.tensors.count(modules[0] + part)) continue;
        const torch::Tensor& first = w.tensors.at(modules[0] + part);
        for (const auto& m : modules) {
          const torch::Tensor& t = w.tensors.at(m + part);
          EXPECT_TRUE(t.is_alias_of(first)) << m << part;
          EXPECT_TRUE(t.is_contiguous()) << m << part;
          EXPECT_TRUE(torch::equal(t, original.at(m + part))) << m << part;
        }
      }
  // Packed tensors are not copied again.
  std::map<std::string, torch::Tensor> again = w.tensors;
  weights_group_pack(c, again);
  for (const auto& [name, t] : w.tensors) EXPECT_EQ(again.at(name).data_ptr(), t.data_ptr()) << name;
}

TEST(WeightsGroup, OneGemmEqualsOnePerModule) {
  const LlamaWeights w = qwen_like_weights();
  const torch::Tensor x = torch::randn({2, 7, 48});
  const torch::Tensor fused = weights_linear_group(w, {}, kQkv, x);
  ASSERT_EQ(fused.sizes(), (std::vector<int64_t>{2, 7, (4 + 2 + 2) * 12}));
  EXPECT_TRUE(torch::allclose(fused, separate(w, {}, kQkv, x), 1e-5, 1e-6));
  const std::vector<std::string> mlp = {"model.layers.2.mlp.gate_proj", "model.layers.2.mlp.up_proj"};
  EXPECT_TRUE(torch::allclose(weights_linear_group(w, {}, mlp, x), separate(w, {}, mlp, x), 1e-5, 1e-6));
}

TEST(WeightsGroup, TrainableOverridesGetTheGradientsOfSeparateLinears) {
  const LlamaWeights w = qwen_like_weights();
  const torch::Tensor x = torch::randn({3, 5, 48}, torch::kDouble);
  const torch::Tensor target = torch::randn({3, 5, 96}, torch::kDouble);
  auto grads = [&](bool grouped) {
    Overrides o;
    std::vector<torch::Tensor> leaves;
    for (const auto& m : kQkv)
      for (const char* part : {".weight", ".bias"}) {
        leaves.push_back(w.tensors.at(m + part).to(torch::kDouble).clone().set_requires_grad(true));
        o.replace[m + part] = leaves.back() * 1.0;  // a cast-like non-leaf, as the trainer passes
      }
    const torch::Tensor y = grouped ? weights_linear_group(w, o, kQkv, x) : separate(w, o, kQkv, x);
    (y * target).sum().backward();
    std::vector<torch::Tensor> out;
    for (const auto& l : leaves) out.push_back(l.grad());
    return out;
  };
  const auto a = grads(true), b = grads(false);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-12, 1e-12)) << i;
}

TEST(WeightsGroup, LoraOrBiasesOnSomeFallBackToOneLinearEach) {
  const LlamaWeights w = qwen_like_weights();
  const torch::Tensor x = torch::randn({1, 4, 48});
  Overrides lora;
  lora.lora[kQkv[1]] = LoraAdapter{torch::randn({3, 48}), torch::randn({24, 3}), 0.5, 0.0};
  EXPECT_TRUE(torch::allclose(weights_linear_group(w, lora, kQkv, x), separate(w, lora, kQkv, x), 1e-5, 1e-6));
  // A bias on q_proj alone (an override over a bias-free checkpoint).
  const LlamaWeights plain = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 9);
  Overrides some;
  some.replace[kQkv[0] + ".bias"] = torch::randn({48});
  const torch::Tensor y = weights_linear_group(plain, some, kQkv, x);
  EXPECT_TRUE(torch::allclose(y, separate(plain, some, kQkv, x), 1e-5, 1e-6));
  EXPECT_FALSE(torch::allclose(y, weights_linear_group(plain, {}, kQkv, x)));
}

}  // namespace
