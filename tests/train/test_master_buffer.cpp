// MasterBuffer against the per-tensor casts it replaces: the same values forward, the same
// gradients backward (bit for bit), each q|k|v group one cast, the masters views of one buffer that
// the optimizer's in-place updates reach, no gradient where nothing was read, no cast kept by the
// graph where linear_recast reads it, and each unit's cast freed by backward through recomputed
// layers where nothing does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../model/tiny_config.h"               // defines: tiny_config
#include "linear_ard/model/llama_model.h"     // defines: model_forward
#include "linear_ard/model/weights_group.h"   // defines: weights_linear_group
#include "linear_ard/train/master_buffer.h"   // defines: MasterBuffer

namespace {

using namespace linear_ard;

const std::string kLayer = "model.layers.1.self_attn.";
const std::vector<std::string> kQkv = {kLayer + "q_proj", kLayer + "k_proj", kLayer + "v_proj"};

// q/k/v weights and biases of layer 1 plus a lone tensor (o_proj's weight), bf16 in the checkpoint.
struct Fixture {
  model::LlamaWeights weights;
  io::TensorMap checkpoint;
  std::vector<std::string> names;
};

Fixture fixture_make() {
  model::ModelConfig c = model::tiny_config();
  c.attention_bias = true;
  Fixture f;
  f.weights = model::llama_weights_random(c, torch::kFloat, torch::kCPU, 11);
  torch::manual_seed(12);
  for (const auto& m : kQkv)
    for (const char* part : {".weight", ".bias"}) f.names.push_back(m + part);
  f.names.push_back(kLayer + "o_proj.weight");
  for (const auto& n : f.names) f.checkpoint[n] = torch::randn(f.weights.tensors.at(n).sizes()).to(torch::kBFloat16);
  return f;
}

TEST(MasterBuffer, GroupIsOneViewAndGradientsMatchPerTensorCasts) {
  const Fixture f = fixture_make();
  train::MasterBuffer buffer(f.names, f.checkpoint, f.weights.config.num_hidden_layers, torch::kCPU);
  const auto& masters = buffer.parameters();
  ASSERT_EQ(masters.size(), f.names.size());
  for (size_t i = 0; i < masters.size(); ++i) {
    EXPECT_TRUE(masters[i].is_leaf() && masters[i].requires_grad()) << f.names[i];
    EXPECT_TRUE(masters[i].is_alias_of(masters[0])) << f.names[i];
    EXPECT_TRUE(torch::equal(masters[i], f.checkpoint.at(f.names[i]).to(torch::kFloat))) << f.names[i];
  }
  const model::Overrides o = buffer.overrides(torch::kBFloat16);
  ASSERT_EQ(o.stacked.count(kQkv[0] + ".weight"), 1u);
  ASSERT_EQ(o.stacked.count(kQkv[0] + ".bias"), 1u);
  EXPECT_TRUE(o.replace.at(kQkv[2] + ".weight").is_alias_of(o.stacked.at(kQkv[0] + ".weight")));

  std::vector<torch::Tensor> leaves;
  model::Overrides reference;
  for (size_t i = 0; i < masters.size(); ++i) {
    leaves.push_back(masters[i].detach().clone().requires_grad_(true));
    reference.replace[f.names[i]] = leaves.back().to(torch::kBFloat16);
  }
  const torch::Tensor x = torch::randn({2, 5, f.weights.config.hidden_size}).to(torch::kBFloat16);
  const torch::Tensor y = model::weights_linear_group(f.weights, o, kQkv, x);
  const torch::Tensor y_ref = model::weights_linear_group(f.weights, reference, kQkv, x);
  EXPECT_TRUE(torch::equal(y, y_ref));
  const torch::Tensor g = torch::randn(y.sizes()).to(torch::kBFloat16);
  y.backward(g);
  y_ref.backward(g);
  for (size_t i = 0; i + 1 < masters.size(); ++i)
    EXPECT_TRUE(torch::equal(masters[i].grad(), leaves[i].grad())) << f.names[i];
  EXPECT_FALSE(masters.back().grad().defined()) << "o_proj was not read";
}

TEST(MasterBuffer, InPlaceUpdatesReachTheNextCast) {
  const Fixture f = fixture_make();
  train::MasterBuffer buffer(f.names, f.checkpoint, f.weights.config.num_hidden_layers, torch::kCPU);
  {
    torch::NoGradGuard no_grad;
    buffer.parameters()[2].add_(1.0);  // k_proj.weight
  }
  const model::Overrides o = buffer.overrides(torch::kFloat);
  EXPECT_TRUE(torch::equal(o.replace.at(kQkv[1] + ".weight"), buffer.parameters()[2]));
  EXPECT_TRUE(torch::equal(o.stacked.at(kQkv[0] + ".weight").narrow(0, o.replace.at(kQkv[0] + ".weight").size(0),
                                                                     buffer.parameters()[2].size(0)),
                           buffer.parameters()[2]));
}

// Layers 0 and 1 recomputed, layer 2 captured: once backward has run, no unit's cast is alive,
// although the loss (and so the graph with its recompute nodes) still is; before it, the captured
// layer's cast is alive only without the sources (linear_recast keeps those instead).
TEST(MasterBuffer, BackwardFreesEachCastAndTheSourcesKeepTheStoredLayersNone) {
  const model::LlamaWeights w = model::llama_weights_random(model::tiny_config(), torch::kFloat, torch::kCPU, 13);
  std::vector<std::string> names;
  io::TensorMap checkpoint;
  for (int layer = 0; layer < 3; ++layer)
    for (const char* m : {"q_proj", "k_proj", "v_proj"}) {
      const std::string name = "model.layers." + std::to_string(layer) + ".self_attn." + m + ".weight";
      names.push_back(name);
      checkpoint[name] = w.tensors.at(name);
    }
  train::MasterBuffer buffer(names, checkpoint, w.config.num_hidden_layers, torch::kCPU);
  const auto ids = torch::randint(0, 97, {2, 7}, torch::kLong);
  for (const bool sources : {true, false}) {
    std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> casts;
    torch::Tensor loss;
    {
      model::Overrides o = buffer.overrides(torch::kFloat);  // a copy of its own, as a bf16 cast
      ASSERT_EQ(o.stacked.size(), 3u);
      ASSERT_EQ(o.stacked_sources.size(), 3u);
      ASSERT_EQ(o.sources.size(), names.size());
      if (!sources) o.sources.clear(), o.stacked_sources.clear();
      for (const auto& [name, t] : o.stacked) casts.push_back(t.storage().getWeakStorageImpl());
      model::ForwardOptions opt;
      opt.recompute_layers = model::kRecomputeAll;
      opt.stop_after_qkv_layer = 2;
      const model::ModelOutputs out = model::model_forward(w, model::rope_tables_init(w.config), o, ids, opt);
      const model::LayerQkv& qkv = out.qkv.at(2);
      loss = qkv.q.square().mean() + qkv.k.square().mean() + qkv.v.square().mean();
    }
    // Layers 0 and 1's casts are in their recompute closures (made up front, not deferred); layer 2's
    // only a GEMM's saved weight would keep.
    for (size_t u = 0; u < casts.size(); ++u)
      EXPECT_EQ(casts[u].expired(), sources && u == 2) << "before backward, unit " << u << ", sources " << sources;
    loss.backward();
    for (size_t u = 0; u < casts.size(); ++u) EXPECT_TRUE(casts[u].expired()) << "unit " << u;
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_TRUE(buffer.parameters()[i].grad().defined()) << names[i];
      buffer.parameters()[i].mutable_grad().reset();
    }
  }
}

}  // namespace
