// config.json <-> ModelConfig: both RoPE spellings, defaults (Phi-3's too), error messages, round trip, summary.
#include <gtest/gtest.h>

#include "linear_ard/io/hf_config.h"

namespace {

using namespace linear_ard;
using nlohmann::json;

json llama_json() {
  return json{{"model_type", "llama"},       {"architectures", {"LlamaForCausalLM"}},
              {"vocab_size", 256},           {"hidden_size", 64},
              {"intermediate_size", 128},    {"num_hidden_layers", 2},
              {"num_attention_heads", 4},    {"num_key_value_heads", 2},
              {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5},
              {"rope_theta", 500000.0},      {"torch_dtype", "bfloat16"},
              {"some_unknown_key", "kept"}};
}

std::string error_of(const json& j) {
  try {
    io::hf_config_from_json(j);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfig, LegacyRopeScalingWithOldTypeKey) {
  json j = llama_json();
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}};
  const auto c = io::hf_config_from_json(j);
  EXPECT_EQ(c.rope.type, model::RopeType::kYarn);
  EXPECT_DOUBLE_EQ(*c.rope.factor, 4.0);
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(model::model_config_head_dim(c), 16);
  EXPECT_EQ(model::model_config_context_length(c), 16384);
}

TEST(HfConfig, RopeScalingReplacesRopeParametersAsTransformersDoes) {
  // A transformers-5 folder whose rope_scaling was set by hand: transformers 5.23 takes rope_scaling
  // instead of rope_parameters, theta from it, else the top-level rope_theta, else 1e4 (values
  // checked with LlamaConfig(rope_parameters=..., rope_scaling=...)); reading only rope_parameters
  // would silently load the unscaled model.
  json j = llama_json();
  j["rope_parameters"] = {{"rope_theta", 1e5}, {"rope_type", "default"}};
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  auto c = io::hf_config_from_json(j);
  EXPECT_EQ(c.rope.type, model::RopeType::kLinear);
  EXPECT_DOUBLE_EQ(*c.rope.factor, 4.0);
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);  // the top-level rope_theta, not rope_parameters' 1e5
  j.erase("rope_theta");
  EXPECT_DOUBLE_EQ(io::hf_config_from_json(j).rope.theta, 10000.0);
  j["rope_scaling"]["rope_theta"] = 2e5;
  EXPECT_DOUBLE_EQ(io::hf_config_from_json(j).rope.theta, 2e5);
  j["rope_scaling"] = nullptr;  // null: rope_parameters alone
  c = io::hf_config_from_json(j);
  EXPECT_EQ(c.rope.type, model::RopeType::kDefault);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e5);
}

TEST(HfConfig, ContextLengthWithoutOriginalLength) {
  json j = llama_json();
  // A PI checkpoint as usually published: the extended length is max_position_embeddings already.
  j["max_position_embeddings"] = 32768;
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  EXPECT_EQ(model::model_config_context_length(io::hf_config_from_json(j)), 32768);
  // Dynamic NTK scales from max_position_embeddings, the native length.
  j["max_position_embeddings"] = 4096;
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_EQ(model::model_config_context_length(io::hf_config_from_json(j)), 8192);
}

TEST(HfConfig, TransformersFiveRopeParameters) {
  json j = llama_json();
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 1e4}, {"factor", 8.0},
                          {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 512}};
  const auto c = io::hf_config_from_json(j);
  EXPECT_EQ(c.rope.type, model::RopeType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e4);
  EXPECT_EQ(model::rope_original_max_positions(c, c.rope), 512);
}

TEST(HfConfig, ErrorsNameTheKey) {
  json j = llama_json();
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", -2}};
  EXPECT_EQ(error_of(j), "config.json: rope_scaling.factor must be > 0, got -2");
  j["rope_scaling"] = {{"rope_type", "linear"}};
  EXPECT_NE(error_of(j).find("rope_scaling.factor is required"), std::string::npos);
  j = llama_json();
  j.erase("hidden_size");
  EXPECT_EQ(error_of(j), "config.json: missing required key hidden_size");
  j = llama_json();
  j["num_key_value_heads"] = 3;
  EXPECT_NE(error_of(j).find("num_key_value_heads (3) must divide"), std::string::npos);
  j = llama_json();
  j["rope_scaling"] = {{"rope_type", "ntk-magic"}, {"factor", 2}};
  EXPECT_NE(error_of(j).find("unknown rope type \"ntk-magic\""), std::string::npos);
}

TEST(HfConfig, MistralSlidingWindowDefaults) {
  json j = llama_json();
  j["model_type"] = "mistral";
  EXPECT_EQ(*model::model_config_layer_window(io::hf_config_from_json(j), 0), 4096);
  j["sliding_window"] = nullptr;
  EXPECT_FALSE(model::model_config_layer_window(io::hf_config_from_json(j), 0));
  j["model_type"] = "qwen2";
  j["sliding_window"] = 32;
  EXPECT_FALSE(model::model_config_layer_window(io::hf_config_from_json(j), 1));
  EXPECT_TRUE(model::model_config_qkv_bias(io::hf_config_from_json(j)));
}

TEST(HfConfig, RoundTripWritesBothFormsAndKeepsUnknownKeys) {
  json j = llama_json();
  j["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 1e4},
                          {"short_factor", std::vector<double>(8, 1.0)},
                          {"long_factor", std::vector<double>(8, 2.0)},
                          {"original_max_position_embeddings", 1024}};
  j["quantization_config"] = {{"quant_method", "gguf"}};
  const auto c = io::hf_config_from_json(j);
  const json out = io::hf_config_to_json(c, j);
  EXPECT_EQ(out["rope_parameters"]["rope_type"], "longrope");
  EXPECT_EQ(out["rope_parameters"]["rope_theta"], 1e4);
  EXPECT_EQ(out["rope_scaling"]["rope_type"], "longrope");
  EXPECT_FALSE(out["rope_scaling"].contains("type"));
  EXPECT_FALSE(out["rope_scaling"].contains("rope_theta"));
  EXPECT_EQ(out["rope_theta"], 1e4);
  EXPECT_EQ(out["some_unknown_key"], "kept");
  EXPECT_FALSE(out.contains("quantization_config"));
  EXPECT_FALSE(out.contains("torch_dtype"));
  EXPECT_EQ(out["dtype"], "bfloat16");
  const auto again = io::hf_config_from_json(out);
  EXPECT_EQ(again.rope.long_factor, c.rope.long_factor);
  EXPECT_EQ(again.rope.original_max_position_embeddings, 1024);

  const json plain = io::hf_config_to_json(io::hf_config_from_json(llama_json()));
  EXPECT_TRUE(plain["rope_scaling"].is_null());
  EXPECT_EQ(plain["rope_parameters"], json({{"rope_type", "default"}, {"rope_theta", 500000.0}}));
}

TEST(HfConfig, WritesOnlyTheKeysTransformersValidatesPerType) {
  // transformers 5.23 warns "Unrecognized keys in rope_parameters" for original_max_position_embeddings
  // under linear and dynamic; yarn, llama3 and longrope require it (resolved when it was implicit).
  json j = llama_json();
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}};
  json out = io::hf_config_to_json(io::hf_config_from_json(j), j);
  EXPECT_EQ(out["rope_parameters"], json({{"rope_type", "linear"}, {"factor", 4.0}, {"rope_theta", 500000.0}}));
  EXPECT_EQ(out["rope_scaling"], json({{"rope_type", "linear"}, {"factor", 4.0}}));
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  out = io::hf_config_to_json(io::hf_config_from_json(j), j);
  EXPECT_EQ(out["rope_scaling"]["original_max_position_embeddings"], j["max_position_embeddings"]);
}

TEST(HfConfig, DescribeMentionsRopeAndContext) {
  json j = llama_json();
  j["rope_scaling"] = {
      {"rope_type", "linear"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}};
  const std::string text = model::model_config_describe(io::hf_config_from_json(j));
  EXPECT_NE(text.find("LlamaForCausalLM"), std::string::npos);
  EXPECT_NE(text.find("linear"), std::string::npos);
  EXPECT_NE(text.find("context length:    16384"), std::string::npos);
}

TEST(HfConfig, DescribeCountsInReadableUnitsAndNamesTheArchitecture) {
  // 256*64 embeddings + 2 layers + norm + untied head: about 0.1 M, not "0.00 B".
  json j = llama_json();
  const std::string text = model::model_config_describe(io::hf_config_from_json(j));
  EXPECT_NE(text.find("architecture:      LlamaForCausalLM (model_type llama)\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" K)\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("0.00 B"), std::string::npos) << text;
  j.erase("architectures");
  j["model_type"] = "mistral";
  EXPECT_NE(model::model_config_describe(io::hf_config_from_json(j))
                .find("MistralForCausalLM (model_type mistral; config.json names no architectures)"),
            std::string::npos);
  j["vocab_size"] = 32000;
  j["hidden_size"] = 4096;
  j["intermediate_size"] = 11008;
  j["num_hidden_layers"] = 32;
  j["num_attention_heads"] = 32;
  j["num_key_value_heads"] = 32;
  j["model_type"] = "llama";
  // LLaMA-2-7B's shape: 6,738,415,616 parameters.
  EXPECT_NE(model::model_config_describe(io::hf_config_from_json(j)).find("6738415616 (6.74 B)"), std::string::npos);
}

TEST(HfConfig, UnsupportedModelTypeNamesTheSupportedOnes) {
  EXPECT_EQ(error_of([] { json j = llama_json(); j["model_type"] = "gemma2"; return j; }()),
            "config.json: model_type \"gemma2\" is not supported (supported: llama, mistral, qwen2, qwen3, phi3)");
}

TEST(HfConfig, Phi3RopeTypesAndTopLevelOriginalLength) {
  json j = llama_json();
  j["model_type"] = "phi3";
  j.erase("rms_norm_eps");
  const auto plain = io::hf_config_from_json(j);
  EXPECT_EQ(*plain.original_max_position_embeddings, 4096);  // Phi3Config's class default
  EXPECT_DOUBLE_EQ(plain.rms_norm_eps, 1e-5);
  EXPECT_FALSE(model::model_config_layer_window(plain, 0));
  j["max_position_embeddings"] = 131072;
  j["rope_scaling"] = {{"type", "su"}, {"short_factor", std::vector<double>(8, 1.0)},
                       {"long_factor", std::vector<double>(8, 4.0)}};
  const auto su = io::hf_config_from_json(j);
  EXPECT_EQ(su.rope.type, model::RopeType::kLongrope);  // Phi3Config renames su and yarn
  EXPECT_EQ(model::rope_original_max_positions(su, su.rope), 4096);
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  EXPECT_EQ(error_of(j), "config.json: rope_scaling.rope_type is not one Phi3ForCausalLM takes (default, longrope), got \"linear\"");
}

}  // namespace
