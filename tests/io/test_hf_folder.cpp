// HF folders: load/save round trip, tokenizer files carried over, atomic replace and refusals.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io_test_dir.h"
#include "linear_ard/io/hf_config.h"
#include "linear_ard/io/hf_folder.h"

using namespace linear_ard::io;
namespace fs = std::filesystem;

namespace {

class HfFolderTest : public IoTestDir {
 protected:
  HfFolder folder_sample() {
    const fs::path src = dir_ / "src";
    fs::create_directories(src);
    std::ofstream(src / "tokenizer.json") << R"({"model":{}})";
    std::ofstream(src / "tokenizer_config.json") << "{}";
    HfFolder f;
    f.config = {{"model_type", "llama"}, {"architectures", {"LlamaForCausalLM"}}, {"vocab_size", 16},
                {"hidden_size", 8}, {"intermediate_size", 16}, {"num_hidden_layers", 1},
                {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"max_position_embeddings", 32},
                {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0}, {"custom_key", "kept"}};
    f.model_config = hf_config_from_json(f.config);
    f.generation_config = nlohmann::json{{"bos_token_id", 1}};
    f.tokenizer_files = {{"tokenizer.json", (src / "tokenizer.json").string()},
                         {"tokenizer_config.json", (src / "tokenizer_config.json").string()}};
    f.weights = {{"model.embed_tokens.weight", torch::rand({16, 8})}, {"model.norm.weight", torch::ones({8})}};
    return f;
  }
};

TEST_F(HfFolderTest, RoundTrips) {
  const HfFolder saved = folder_sample();
  HfFolderSaveOptions options;
  options.max_shard_bytes = 300;
  hf_folder_save(path("out/"), saved, options);
  const HfFolder loaded = hf_folder_load(path("out"));
  EXPECT_EQ(loaded.path, path("out"));
  // config.json is the typed config written over the original, with the written weights' dtype.
  linear_ard::model::ModelConfig written = saved.model_config;
  written.torch_dtype = "float32";
  EXPECT_EQ(loaded.config, hf_config_to_json(written, saved.config));
  EXPECT_EQ(loaded.config["dtype"], "float32");
  EXPECT_EQ(loaded.config["custom_key"], "kept");
  EXPECT_EQ(loaded.model_config.hidden_size, 8);
  EXPECT_EQ(loaded.generation_config, saved.generation_config);
  EXPECT_EQ(loaded.tokenizer_files.size(), 2u);
  EXPECT_EQ(loaded.tokenizer_files.at("tokenizer.json"), path("out/tokenizer.json"));
  EXPECT_TRUE(fs::exists(path("out/model.safetensors.index.json")));  // 512 + 32 bytes > 300
  ASSERT_EQ(loaded.weights.size(), 2u);
  EXPECT_TRUE(torch::equal(loaded.weights.at("model.embed_tokens.weight"), saved.weights.at("model.embed_tokens.weight")));

  const HfFolder config_only = hf_folder_load(path("out"), false);
  EXPECT_TRUE(config_only.weights.empty());
  EXPECT_EQ(config_only.config, loaded.config);
}

TEST_F(HfFolderTest, ReplacesOnlyWhenAskedAndLeavesNothingBehind) {
  HfFolder f = folder_sample();
  fs::create_directories(path("empty"));
  hf_folder_save(path("empty"), f);  // an empty folder is fine
  try {
    hf_folder_save(path("empty"), f);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exists and is not empty"), std::string::npos) << e.what();
  }
  // Reload from the target itself, then replace it with a RoPE-scaled config: the mapped weights
  // stay valid and the typed config decides config.json.
  HfFolder again = hf_folder_load(path("empty"));
  again.model_config.rope.type = linear_ard::model::RopeType::kLinear;
  again.model_config.rope.factor = 4.0;
  HfFolderSaveOptions overwrite;
  overwrite.overwrite = true;
  hf_folder_save(path("empty"), again, overwrite);
  const HfFolder replaced = hf_folder_load(path("empty"));
  EXPECT_EQ(replaced.model_config.rope.type, linear_ard::model::RopeType::kLinear);
  EXPECT_EQ(replaced.model_config.rope.factor, 4.0);
  EXPECT_TRUE(torch::equal(replaced.weights.at("model.norm.weight"), torch::ones({8})));

  // A failure part-way (missing tokenizer source) leaves neither the target nor temporaries.
  f.tokenizer_files["tokenizer.model"] = path("src/nonexistent.model");
  EXPECT_THROW(hf_folder_save(path("fresh"), f), std::runtime_error);
  f.weights.clear();
  EXPECT_THROW(hf_folder_save(path("fresh"), f), std::runtime_error);
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"empty", "src"}));
  EXPECT_THROW(hf_folder_load(path("src")), std::runtime_error);  // no config.json
}

}  // namespace
