// Model behaviours that need no reference library: early stop, KV cache, gradients through recomputed layers,
// RoPE tables of teacher and student over one set of weights.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "linear_ard/model/generate.h"
#include "linear_ard/model/llama_model.h"
#include "tiny_config.h"  // defines: tiny_config

namespace {

using namespace linear_ard::model;

double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

TEST(LlamaModel, StopAfterLayerMatchesFullRun) {
  const auto w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 1);
  const auto rope = rope_tables_init(w.config);
  auto ids = torch::randint(0, 97, {2, 11}, torch::kLong);
  ForwardOptions full;
  full.capture_qkv_layers = {-1};
  auto a = model_forward(w, rope, {}, ids, full);
  ForwardOptions stop;
  stop.stop_after_qkv_layer = 2;
  auto b = model_forward(w, rope, {}, ids, stop);
  EXPECT_FALSE(b.logits.defined());
  EXPECT_TRUE(torch::equal(a.qkv.at(2).q, b.qkv.at(2).q));
  EXPECT_TRUE(torch::equal(a.qkv.at(2).k, b.qkv.at(2).k));
  EXPECT_TRUE(torch::equal(a.qkv.at(2).v, b.qkv.at(2).v));
  EXPECT_EQ(b.qkv.at(2).k.size(1), 2);  // K/V before the GQA repeat
}

TEST(LlamaModel, KvCacheStepsMatchFullForward) {
  for (bool sliding : {false, true}) {
    ModelConfig c = tiny_config();
    c.model_type = "mistral";
    if (sliding) c.sliding_window = 5;
    c.rope.type = RopeType::kDynamic;  // length-dependent: exercises growth past 32 positions
    c.rope.factor = 2.0;
    c.max_position_embeddings = 12;
    const auto w = llama_weights_random(c, torch::kFloat, torch::kCPU, 2);
    const auto rope = rope_tables_init(w.config);
    auto ids = torch::randint(0, 97, {1, 10}, torch::kLong);
    auto full = model_forward(w, rope, {}, ids).logits;
    KvCache cache = kv_cache_init(3);
    ForwardOptions step;
    step.cache = &cache;
    auto first = model_forward(w, rope, {}, ids.narrow(1, 0, 6), step).logits;
    auto rest = model_forward(w, rope, {}, ids.narrow(1, 6, 4), step).logits;
    EXPECT_LT(rel_err(torch::cat({first, rest}, 1), full), 1e-5) << "sliding " << sliding;
  }
}

// The graph's nodes whose name contains `what`, each counted once.
int64_t graph_count(const torch::Tensor& root, const std::string& what) {
  std::set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> todo{root.grad_fn().get()};
  int64_t n = 0;
  while (!todo.empty()) {
    auto* node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second) continue;
    n += node->name().find(what) != std::string::npos;
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function.get());
  }
  return n;
}

// Recomputing none, the first, or every layer (the captured layer 2 never) gives the plain
// gradients, with one recomputed node for each layer that recomputes.
TEST(LlamaModel, CheckpointedGradientsEqualPlain) {
  const auto w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 3);
  const auto rope = rope_tables_init(w.config);
  auto ids = torch::randint(0, 97, {2, 9}, torch::kLong);
  const std::vector<std::pair<int64_t, int64_t>> counts{{0, 0}, {1, 1}, {kRecomputeAll, 2}};
  std::vector<std::vector<torch::Tensor>> grads;
  for (const auto& [recompute, nodes] : counts) {
    Overrides o;
    o.replace["model.layers.1.self_attn.k_proj.weight"] =
        w.tensors.at("model.layers.1.self_attn.k_proj.weight").clone().requires_grad_(true);
    torch::manual_seed(5);
    o.lora["model.layers.0.mlp.up_proj"] = {torch::randn({4, 48}).requires_grad_(true),
                                            torch::randn({80, 4}).mul(0.01).requires_grad_(true), 0.5};
    ForwardOptions opt;
    opt.recompute_layers = recompute;
    opt.capture_qkv_layers = {2};
    auto out = model_forward(w, rope, o, ids, opt);
    auto loss = out.logits.square().mean() + out.qkv.at(2).q.sum();
    EXPECT_EQ(graph_count(loss, "RecomputeFunction"), nodes) << recompute;
    loss.backward();
    grads.push_back({o.replace.begin()->second.grad(), o.lora.begin()->second.a.grad(),
                     o.lora.begin()->second.b.grad()});
  }
  for (size_t r = 1; r < grads.size(); ++r)
    for (size_t i = 0; i < grads[0].size(); ++i) {
      ASSERT_TRUE(grads[r][i].defined());
      EXPECT_LT(rel_err(grads[r][i], grads[0][i]), 1e-6) << r << " " << i;
    }
}

TEST(LlamaModel, TeacherAndStudentShareWeights) {
  const auto w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 4);
  RopeConfig scaled = w.config.rope;
  scaled.type = RopeType::kLinear;
  scaled.factor = 4.0;
  const auto teacher = rope_tables_init(w.config);
  const auto student = rope_tables_init(w.config, scaled);
  auto ids = torch::randint(0, 97, {1, 8}, torch::kLong);
  ForwardOptions opt;
  opt.stop_after_qkv_layer = 0;
  auto t = model_forward(w, teacher, {}, ids, opt).qkv.at(0);
  auto s = model_forward(w, student, {}, ids, opt).qkv.at(0);
  EXPECT_TRUE(torch::equal(t.v, s.v));   // the first layer's V carries no position
  EXPECT_FALSE(torch::equal(t.q, s.q));  // its Q does
  EXPECT_TRUE(torch::allclose(student.base.inv_freq * 4, teacher.base.inv_freq));
}

TEST(LlamaModel, GreedyStopsAtEos) {
  const auto w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 6);
  const auto rope = rope_tables_init(w.config);
  auto ids = torch::randint(0, 97, {1, 4}, torch::kLong);
  GenerateOptions g;
  g.max_new_tokens = 6;
  auto free_run = model_generate_greedy(w, rope, {}, ids, g);
  ASSERT_EQ(free_run.size(1), 10);
  g.eos_token_ids = {free_run[0][5].item<int64_t>()};
  auto stopped = model_generate_greedy(w, rope, {}, ids, g);
  EXPECT_LE(stopped.size(1), 6);
}

// Decoding on a fixed-capacity cache (the CUDA-graph path's cache, here without a graph) gives the
// logits of the growing cache, step after step, for RoPEs with and without attention scaling.
TEST(LlamaModel, FixedCapacityCacheMatchesGrowingCache) {
  const auto w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 8);
  RopeConfig yarn = w.config.rope;
  yarn.type = RopeType::kYarn;
  yarn.factor = 4.0;
  yarn.original_max_position_embeddings = 32;
  for (const auto& tables : {rope_tables_init(w.config), rope_tables_init(w.config, yarn)}) {
    const auto prompt = torch::randint(0, 97, {2, 5}, torch::kLong);
    KvCache growing = kv_cache_init(w.config.num_hidden_layers);
    ForwardOptions opt;
    opt.cache = &growing;
    model_forward(w, tables, {}, prompt, opt);
    KvCache fixed = kv_cache_fixed(growing, 5 + 4, tables);
    ForwardOptions fixed_opt;
    fixed_opt.cache = &fixed;
    for (int step = 0; step < 4; ++step) {
      const auto token = torch::randint(0, 97, {2, 1}, torch::kLong);
      const auto want = model_forward(w, tables, {}, token, opt).logits;
      const auto got = model_forward(w, tables, {}, token, fixed_opt).logits;
      EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << "step " << step << ": max diff "
                                                          << (got - want).abs().max().item<float>();
      fixed.fixed->position.add_(1);
    }
    EXPECT_EQ(kv_cache_length(growing), 9);
    EXPECT_EQ(fixed.fixed->position.item<int64_t>(), 9);
  }
}

TEST(LlamaModel, FixedCapacityCacheRefusesWhatItCannotHold) {
  const auto w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 9);
  const auto tables = rope_tables_init(w.config);
  KvCache growing = kv_cache_init(w.config.num_hidden_layers);
  EXPECT_THROW(kv_cache_fixed(growing, 8, tables), std::invalid_argument);  // empty
  ForwardOptions opt;
  opt.cache = &growing;
  model_forward(w, tables, {}, torch::randint(0, 97, {1, 6}, torch::kLong), opt);
  EXPECT_THROW(kv_cache_fixed(growing, 5, tables), std::invalid_argument);  // smaller than 6 tokens
  RopeConfig dynamic = w.config.rope;
  dynamic.type = RopeType::kDynamic;
  dynamic.factor = 2.0;
  EXPECT_THROW(kv_cache_fixed(growing, 8, rope_tables_init(w.config, dynamic)), std::invalid_argument);
  KvCache fixed = kv_cache_fixed(growing, 8, tables);
  opt.cache = &fixed;
  EXPECT_THROW(model_forward(w, tables, {}, torch::randint(0, 97, {1, 2}, torch::kLong), opt), c10::Error);
}

}  // namespace
