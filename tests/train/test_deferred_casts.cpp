// Deferred casts (TrainableSet::overrides with defer, model::DeferredCasts) against the casts made
// up front: with the casts' sources (linear_recast) no layer keeps a cast between forward and
// backward; without them a layer that activation recomputation reruns keeps none and a layer that
// stores its activations keeps its own; the gradients are the same bit for bit either way (on the
// parameters, or held in the model dtype), for the q/k/v masters and for LoRA.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../model/tiny_config.h"            // defines: tiny_config
#include "linear_ard/model/llama_model.h"    // defines: model_forward, kRecomputeAll
#include "linear_ard/model/rope.h"           // defines: rope_tables_init
#include "linear_ard/train/trainable_set.h"  // defines: TrainableSet

namespace {

using namespace linear_ard;

train::TrainableSet trainables_make(const model::LlamaWeights& w, train::Trainable mode) {
  torch::manual_seed(4);
  train::LoraConfig lora;
  lora.rank = 3;
  train::TrainableSet set(mode, lora, w.tensors, w, w.config.num_hidden_layers - 1, torch::kCPU);
  set.recast_bytes_set(0);  // every cast with its source: the tiny model's are far below kRecastBytes
  torch::NoGradGuard no_grad;
  if (mode == train::Trainable::kLoraQkv)  // B = 0 would give A no gradient
    for (size_t i = 1; i < set.parameters().size(); i += 2) set.parameters()[i].fill_(0.01);
  return set;
}

// Every layer but the captured last one recomputed; the loss reads the last layer's Q/K/V.
torch::Tensor loss_of(const model::LlamaWeights& w, const model::Overrides& o, const torch::Tensor& ids) {
  model::ForwardOptions options;
  options.recompute_layers = model::kRecomputeAll;
  options.stop_after_qkv_layer = -1;
  const model::LayerQkv qkv = model::model_forward(w, model::rope_tables_init(w.config), o, ids, options).qkv.begin()->second;
  return qkv.q.to(torch::kFloat).square().mean() + qkv.k.to(torch::kFloat).mean() + qkv.v.to(torch::kFloat).square().sum();
}

// The gradients a backward left: held ones cast up, else the parameters', flattened in order.
torch::Tensor gradients_of(train::TrainableSet& set, bool hold) {
  std::vector<torch::Tensor> flat;
  if (hold) {
    for (const auto& g : set.held().held()) flat.push_back(g.to(torch::kFloat));
  } else {
    for (const auto& p : set.parameters()) flat.push_back(p.grad().reshape(-1));
  }
  return torch::cat(flat);
}

// The overrides `made` without what linear_recast reads instead of the casts.
model::Overrides sources_dropped(model::Overrides made) {
  made.sources.clear();
  made.stacked_sources.clear();
  for (auto& [name, l] : made.lora) l.a_source = l.b_source = torch::Tensor();
  return made;
}

TEST(DeferredCasts, RecomputedLayersKeepNoCastAndTheGradientsAreTheSame) {
  const auto w = model::llama_weights_random(model::tiny_config(), torch::kBFloat16, torch::kCPU, 31);
  const auto ids = torch::randint(0, 97, {2, 9}, torch::kLong);
  for (const auto mode : {train::Trainable::kQkv, train::Trainable::kLoraQkv})
    for (const bool hold : {false, true})
      for (const bool sources : {true, false}) {
        train::TrainableSet eager = trainables_make(w, mode), deferred = trainables_make(w, mode);
        loss_of(w, eager.overrides(torch::kBFloat16, true, hold), ids).backward();

        model::Overrides o = deferred.overrides(torch::kBFloat16, true, hold, /*defer=*/true);
        ASSERT_TRUE(o.deferred && o.replace.empty() && o.stacked.empty() && o.lora.empty());
        // What each layer's casts were, by prefix, as weak references to their storage.
        std::map<std::string, std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>>> made;
        auto recording = std::make_shared<model::DeferredCasts>(*o.deferred);
        recording->cast = [inner = o.deferred, &made, sources](const std::string& prefix) {
          model::Overrides r = sources ? inner->cast(prefix) : sources_dropped(inner->cast(prefix));
          for (const auto& [name, t] : r.replace) made[prefix].push_back(t.storage().getWeakStorageImpl());
          for (const auto& [name, l] : r.lora)
            for (const auto* t : {&l.a, &l.b}) made[prefix].push_back(t->storage().getWeakStorageImpl());
          return r;
        };
        o.deferred = recording;
        torch::Tensor loss = loss_of(w, o, ids);
        o = {};
        ASSERT_EQ(made.size(), 3u);
        for (const auto& [prefix, casts] : made)
          for (const auto& c : casts)
            EXPECT_EQ(c.expired(), sources || prefix != "model.layers.2.") << prefix << (hold ? " held" : "")
                                                                            << (sources ? " sources" : "");
        loss.backward();
        EXPECT_TRUE(torch::equal(gradients_of(deferred, hold), gradients_of(eager, hold))) << (hold ? "held" : "");
      }
}

// Sources come with the casts of at least recast_bytes (bf16: 2 bytes an element), the unit's whole
// cast for the q|k|v masters, each factor's own for LoRA.
TEST(DeferredCasts, OnlyCastsOfAtLeastTheRecastBytesComeWithSources) {
  const auto w = model::llama_weights_random(model::tiny_config(), torch::kBFloat16, torch::kCPU, 31);
  const std::string q = "model.layers.1.self_attn.q_proj";
  for (const auto mode : {train::Trainable::kQkv, train::Trainable::kLoraQkv}) {
    train::TrainableSet set = trainables_make(w, mode);
    const model::Overrides all = set.overrides(torch::kBFloat16, true);
    const int64_t bytes = mode == train::Trainable::kQkv ? all.stacked.at(q + ".weight").numel() * 2
                                                          : all.lora.at(q).a.numel() * 2;
    for (const int64_t threshold : {bytes, bytes + 1}) {
      set.recast_bytes_set(threshold);
      const model::Overrides o = set.overrides(torch::kBFloat16, true);
      const bool with = threshold == bytes;
      if (mode == train::Trainable::kQkv) {
        EXPECT_EQ(o.stacked_sources.count(q + ".weight"), with ? 1u : 0u) << threshold;
        EXPECT_EQ(o.sources.count(q + ".weight"), with ? 1u : 0u) << threshold;
      } else {
        EXPECT_EQ(o.lora.at(q).a_source.defined(), with) << threshold;
      }
    }
    set.recast_bytes_set(train::TrainableSet::kRecastBytes);
    const model::Overrides o = set.overrides(torch::kBFloat16, true);
    EXPECT_TRUE(o.sources.empty() && o.stacked_sources.empty()) << "the tiny model's casts are below kRecastBytes";
    if (mode == train::Trainable::kLoraQkv) EXPECT_FALSE(o.lora.at(q).a_source.defined() || o.lora.at(q).b_source.defined());
  }
}

}  // namespace
