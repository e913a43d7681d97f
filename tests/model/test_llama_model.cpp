// Model behaviours that need no reference library: early stop, KV cache, gradients through recomputed layers,
// RoPE tables of teacher and student over one set of weights.
#include <gtest/gtest.h>

#include "linear_ard/model/generate.h"
#include "linear_ard/model/llama_model.h"

namespace {

using namespace linear_ard::model;

ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab_size = 97;
  c.hidden_size = 48;
  c.intermediate_size = 80;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 32;
  c.rope.theta = 10000.0;
  return c;
}

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

TEST(LlamaModel, CheckpointedGradientsEqualPlain) {
  const auto w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 3);
  const auto rope = rope_tables_init(w.config);
  auto ids = torch::randint(0, 97, {2, 9}, torch::kLong);
  std::vector<torch::Tensor> grads[2];
  for (int ckpt = 0; ckpt < 2; ++ckpt) {
    Overrides o;
    o.replace["model.layers.1.self_attn.k_proj.weight"] =
        w.tensors.at("model.layers.1.self_attn.k_proj.weight").clone().requires_grad_(true);
    torch::manual_seed(5);
    o.lora["model.layers.0.mlp.up_proj"] = {torch::randn({4, 48}).requires_grad_(true),
                                            torch::randn({80, 4}).mul(0.01).requires_grad_(true), 0.5};
    ForwardOptions opt;
    opt.recompute_layers = ckpt == 1;
    opt.capture_qkv_layers = {2};
    auto out = model_forward(w, rope, o, ids, opt);
    (out.logits.square().mean() + out.qkv.at(2).q.sum()).backward();
    grads[ckpt] = {o.replace.begin()->second.grad(), o.lora.begin()->second.a.grad(),
                   o.lora.begin()->second.b.grad()};
  }
  for (size_t i = 0; i < grads[0].size(); ++i) {
    ASSERT_TRUE(grads[1][i].defined());
    EXPECT_LT(rel_err(grads[1][i], grads[0][i]), 1e-6) << i;
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

}  // namespace
