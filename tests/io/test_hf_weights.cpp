// HF weights (sharded or one file): transformers' split rule and names, the index, stale shards, bad indexes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io_test_dir.h"
#include "linear_ard/io/hf_weights.h"
#include "linear_ard/io/json_file.h"

using namespace linear_ard::io;
namespace fs = std::filesystem;

namespace {

class HfWeights : public IoTestDir {};

// 100-byte tensors (25 floats) except "c", which is 400 bytes.
TensorMap tensors_sample() {
  TensorMap t;
  for (const char* name : {"a", "b", "d", "e"}) t[name] = torch::rand({25});
  t["c"] = torch::rand({100});
  return t;
}

void expect_same(const TensorMap& a, const TensorMap& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_TRUE(torch::equal(t, b.at(name))) << name;
  }
}

TEST_F(HfWeights, ShardsLikeTransformers) {
  const TensorMap tensors = tensors_sample();
  hf_weights_save(dir_.string(), tensors, 250);
  // huggingface_hub emits an oversized tensor as a shard at once, before the one being filled:
  // c (400 > 250) is shard 1, then a+b, then d+e.
  const nlohmann::json index = json_file_read(path(hf_weights_index_name));
  EXPECT_EQ(index["metadata"]["total_size"], 800);
  EXPECT_EQ(index["metadata"]["total_parameters"], 200);
  const nlohmann::json expected_map = {{"a", "model-00002-of-00003.safetensors"},
                                       {"b", "model-00002-of-00003.safetensors"},
                                       {"c", "model-00001-of-00003.safetensors"},
                                       {"d", "model-00003-of-00003.safetensors"},
                                       {"e", "model-00003-of-00003.safetensors"}};
  EXPECT_EQ(index["weight_map"], expected_map);
  expect_same(hf_weights_load(dir_.string()), tensors);
  EXPECT_EQ(safetensors_load(path("model-00001-of-00003.safetensors")).size(), 1u);
}

TEST_F(HfWeights, SingleFileWhenItFitsAndStaleFilesGo) {
  const TensorMap tensors = tensors_sample();
  hf_weights_save(dir_.string(), tensors, 250);
  std::ofstream(path("README.md")) << "kept";
  hf_weights_save(dir_.string(), tensors, 1000);
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"README.md", hf_weights_single_name}));
  expect_same(hf_weights_load(dir_.string()), tensors);

  hf_weights_save(dir_.string(), tensors, 600);  // back to 2 shards (a-c, d-e): the single file goes
  EXPECT_FALSE(fs::exists(path(hf_weights_single_name)));
  EXPECT_TRUE(fs::exists(path("model-00002-of-00002.safetensors")));
  expect_same(hf_weights_load(dir_.string()), tensors);
}

TEST_F(HfWeights, RefusesBadIndexesAndEmptyFolders) {
  auto expect_error = [&](const std::string& expected) {
    try {
      hf_weights_load(dir_.string());
      FAIL() << "no exception, expected: " << expected;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  expect_error("holds neither model.safetensors nor model.safetensors.index.json");

  safetensors_save(path("s.safetensors"), {{"a", torch::zeros({1})}});
  std::ofstream(path(hf_weights_index_name)) << R"({"weight_map":{"a":"s.safetensors","b":"s.safetensors"}})";
  expect_error("tensor 'b' is listed in s.safetensors but that shard lacks it");
  std::ofstream(path(hf_weights_index_name), std::ios::trunc) << R"({"weight_map":{"a":"../s.safetensors"}})";
  expect_error("names '../s.safetensors', not a file of the folder");
  std::ofstream(path(hf_weights_index_name), std::ios::trunc) << R"({"weights":{}})";
  expect_error("has no 'weight_map' object");
  std::ofstream(path(hf_weights_index_name), std::ios::trunc) << R"({"weight_map":)";
  expect_error("not valid JSON");
  std::ofstream(path(hf_weights_index_name), std::ios::trunc) << R"({"weight_map":{"a":"missing.safetensors"}})";
  expect_error("missing.safetensors: cannot open");

  EXPECT_THROW(hf_weights_save(dir_.string(), {}, 100), std::runtime_error);
  EXPECT_THROW(hf_weights_save(dir_.string(), tensors_sample(), 0), std::runtime_error);
}

}  // namespace
