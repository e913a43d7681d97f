// The families beyond Llama: config.json defaults and refusals as transformers 5.23's config classes
// have them (Qwen3, Phi-3, Mistral), Phi-3's fused tensors split and joined, and the composed
// student RoPE on the published shapes of LLaMA-3.1, Qwen2.5 (yarn) and Phi-3-128k
// (tests/python/test_model_parity.py and test_rope_compose.py compare the numerics with transformers).
#include <gtest/gtest.h>

#include "linear_ard/io/hf_config.h"
#include "linear_ard/io/hf_fused.h"
#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope_compose.h"

namespace {

using namespace linear_ard;
using nlohmann::json;

json config_json(const std::string& model_type) {
  return json{{"model_type", model_type}, {"vocab_size", 256},         {"hidden_size", 64},
              {"intermediate_size", 128}, {"num_hidden_layers", 2},    {"num_attention_heads", 4},
              {"num_key_value_heads", 2}, {"max_position_embeddings", 4096}};
}

std::string compose_error(const model::ModelConfig& teacher, const json& request) {
  try {
    model::rope_compose(teacher, io::hf_rope_dict_from_json(request, teacher.rope));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ModelFamilies, Qwen3DefaultsAndQkNormTensors) {
  json j = config_json("qwen3");
  j["attention_bias"] = true;
  auto c = io::hf_config_from_json(j);
  EXPECT_EQ(model::model_config_head_dim(c), 128);  // Qwen3Config's default, not 64 / 4
  EXPECT_TRUE(model::model_config_qk_norm(c));
  EXPECT_TRUE(model::model_config_qkv_bias(c));
  j["head_dim"] = 24;
  c = io::hf_config_from_json(j);
  // Random weights carry the per-head norms (ones) and the o_proj bias attention_bias adds.
  const auto w = model::llama_weights_random(c, torch::kFloat, torch::kCPU, 1);
  EXPECT_EQ(w.tensors.at("model.layers.1.self_attn.k_norm.weight").sizes().vec(), std::vector<int64_t>{24});
  EXPECT_EQ(w.tensors.count("model.layers.0.self_attn.o_proj.bias"), 1u);
  EXPECT_FALSE(model::model_config_layer_window(c, 1));  // no window without use_sliding_window
  j["use_sliding_window"] = true;
  j["sliding_window"] = 8;
  j["max_window_layers"] = 1;
  c = io::hf_config_from_json(j);
  EXPECT_FALSE(model::model_config_layer_window(c, 0));
  EXPECT_EQ(*model::model_config_layer_window(c, 1), 8);
}

TEST(ModelFamilies, MistralIgnoresBiasKeysAndTakesAnExplicitHeadDim) {
  json j = config_json("mistral");
  j["attention_bias"] = true;  // MistralAttention has no biases whatever the config says
  j["head_dim"] = 32;
  const auto c = io::hf_config_from_json(j);
  EXPECT_FALSE(model::model_config_qkv_bias(c));
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(model::model_config_head_dim(c), 32);
  EXPECT_FALSE(io::hf_config_to_json(c, j).contains("mlp_bias"));
}

TEST(ModelFamilies, Phi3FusedTensorsSplitIntoViewsAndJoinBack) {
  const auto c = io::hf_config_from_json(config_json("phi3"));  // q 4 x 16, k/v 2 x 16, f 128
  io::TensorMap tensors{{"model.layers.0.self_attn.qkv_proj.weight", torch::randn({128, 64})},
                        {"model.layers.0.mlp.gate_up_proj.weight", torch::randn({256, 64})}};
  const io::TensorMap original = tensors;
  io::hf_fused_split(c, tensors);
  EXPECT_EQ(tensors.count("model.layers.0.self_attn.qkv_proj.weight"), 0u);
  const auto& k = tensors.at("model.layers.0.self_attn.k_proj.weight");
  EXPECT_TRUE(k.is_alias_of(original.at("model.layers.0.self_attn.qkv_proj.weight")));
  EXPECT_TRUE(torch::equal(k, original.at("model.layers.0.self_attn.qkv_proj.weight").narrow(0, 64, 32)));
  EXPECT_TRUE(torch::equal(tensors.at("model.layers.0.mlp.up_proj.weight"),
                           original.at("model.layers.0.mlp.gate_up_proj.weight").narrow(0, 128, 128)));
  const io::TensorMap joined = io::hf_fused_join(c, tensors);
  ASSERT_EQ(joined.size(), 2u);
  for (const auto& [name, t] : original) EXPECT_TRUE(torch::equal(joined.at(name), t)) << name;
  EXPECT_EQ(io::hf_fused_name(c, "model.layers.3.mlp.gate_proj.weight"), "model.layers.3.mlp.gate_up_proj.weight");

  io::TensorMap bad{{"model.layers.0.self_attn.qkv_proj.weight", torch::zeros({96, 64})}};
  try {
    io::hf_fused_split(c, bad);
    FAIL() << "a fused tensor of the wrong size was split";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "model.layers.0.self_attn.qkv_proj.weight has shape [96, 64], config.json implies (4 + 2 x 2) x 16 = 128 rows");
  }
}

// LLaMA-3.1-8B's RoPE: llama3 factor 8 over 8192 positions, max_position_embeddings 131072.
model::ModelConfig llama31() {
  json j = config_json("llama");
  j["max_position_embeddings"] = 131072;
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  return io::hf_config_from_json(j);
}

TEST(RopeCompose, Llama31ExtendsItsOwnScalingOrTakesYarnOverTheOriginalLength) {
  const auto t = llama31();
  EXPECT_EQ(model::rope_teacher_context(t), 131072);
  auto s = model::rope_compose(t, io::hf_rope_dict_from_json({{"rope_type", "llama3"}, {"factor", 2.0}}, t.rope));
  EXPECT_DOUBLE_EQ(*s.rope.factor, 16.0);  // the teacher's 8 times 2, same bands
  EXPECT_DOUBLE_EQ(*s.rope.low_freq_factor, 1.0);
  EXPECT_EQ(*s.rope.original_max_position_embeddings, 8192);
  EXPECT_EQ(s.max_position_embeddings, 262144);
  s = model::rope_compose(t, io::hf_rope_dict_from_json({{"rope_type", "yarn"}, {"factor", 2.0}}, t.rope));
  EXPECT_DOUBLE_EQ(*s.rope.factor, 32.0);  // 262144 positions over the original 8192
  EXPECT_EQ(s.max_position_embeddings, 262144);
  EXPECT_NE(compose_error(t, {{"rope_type", "linear"}, {"factor", 2.0}})
                .find("rope_type linear over a teacher whose config.json has rope_type llama3"),
            std::string::npos);
}

TEST(RopeCompose, Phi3LongropeStretchesTheLongFactors) {
  json j = config_json("phi3");
  j["max_position_embeddings"] = 131072;
  j["rope_scaling"] = {{"type", "longrope"}, {"short_factor", std::vector<double>(8, 1.5)},
                       {"long_factor", std::vector<double>(8, 4.0)}};
  const auto t = io::hf_config_from_json(j);
  const auto s = model::rope_compose(t, io::hf_rope_dict_from_json({{"rope_type", "longrope"}, {"factor", 2.0}}, t.rope));
  EXPECT_EQ(s.rope.long_factor, std::vector<double>(8, 8.0));
  EXPECT_EQ(s.rope.short_factor, std::vector<double>(8, 1.5));
  EXPECT_DOUBLE_EQ(*s.rope.factor, 64.0);  // 131072 / 4096 = 32, times 2
  EXPECT_EQ(s.max_position_embeddings, 262144);
  EXPECT_EQ(*s.original_max_position_embeddings, 4096);
  EXPECT_NE(compose_error(t, {{"rope_type", "yarn"}, {"factor", 2.0}}).find("Phi3ForCausalLM takes rope dicts of type default, longrope only"),
            std::string::npos);
}

TEST(RopeCompose, UnscaledTeacherKeepsTheRestoreDefaults) {
  // What restore wrote before teachers could be scaled: native x factor, the native length named.
  const auto t = io::hf_config_from_json(config_json("qwen2"));
  auto s = model::rope_compose(t, io::hf_rope_dict_from_json({{"rope_type", "linear"}, {"factor", 4.0}}, t.rope));
  EXPECT_DOUBLE_EQ(*s.rope.factor, 4.0);
  EXPECT_EQ(s.max_position_embeddings, 16384);
  s = model::rope_compose(t, io::hf_rope_dict_from_json({{"rope_type", "dynamic"}, {"factor", 4.0}}, t.rope));
  EXPECT_EQ(s.max_position_embeddings, 4096);
  s = model::rope_compose(t, io::hf_rope_dict_from_json({{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", 16}}, t.rope));
  EXPECT_DOUBLE_EQ(*s.rope.factor, 4.0);
  EXPECT_DOUBLE_EQ(*s.rope.beta_fast, 16.0);
  EXPECT_EQ(*s.rope.original_max_position_embeddings, 4096);
}

}  // namespace
