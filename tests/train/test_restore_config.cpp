// restore_config's field table: every key parses, emits and round-trips; enums by name; HF-style
// aliases; unknown keys (nested and inside student_rope) named in the error; a key given twice
// named with its lines; data entries with their text field; the docs' key table lists every key.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "linear_ard/model/llama_model.h"     // defines: kRecomputeAll
#include "linear_ard/train/restore_config.h"  // defines: restore_config_load, restore_config_to_yaml

namespace {

using namespace linear_ard;
namespace fs = std::filesystem;

const char* kBase = "teacher: t\nstudent_rope: {rope_type: linear, factor: 4}\ndata: [d.jsonl]\noutput: o\n";

std::string config_write(const std::string& text) {
  static int n = 0;
  const fs::path path = fs::temp_directory_path() / ("test_restore_config_" + std::to_string(::getpid()) + "_" +
                                                     std::to_string(n++) + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

train::RestoreConfig load(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return train::restore_config_load(config_write(text), overrides);
}

// The message of the std::invalid_argument that loading `text` throws ("" when it loads).
std::string load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    load(text, overrides);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(RestoreConfig, ResolvedYamlRoundTrips) {
  const train::RestoreConfig c =
      load(std::string(kBase) + "method: cpt\ntrainable: lora_all\ndevice: cpu\ndtype: bf16\nlayers: [0, -1]\n"
                                "stage2: {steps: 2, lr: 1e-4}\nlora: {rank: 4, dropout: 0.1}\nseed: 7\n");
  EXPECT_EQ(c.method, train::Method::kCpt);
  EXPECT_EQ(c.trainable, train::Trainable::kLoraAll);
  EXPECT_EQ(c.device, train::RunDevice::kCpu);
  EXPECT_EQ(c.dtype, train::RunDtype::kBf16);
  EXPECT_EQ(c.stage2.lr, 1e-4);
  const std::string yaml = train::restore_config_to_yaml(c);
  EXPECT_EQ(train::restore_config_to_yaml(load(yaml)), yaml);
  EXPECT_NE(yaml.find("method: cpt\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("stage2: {steps: 2, ctx_len: 0,"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("pretrain:"), std::string::npos) << yaml;  // only in pretraining runs
}

// checkpoint_layers: true (every layer), false (none) or a count, each emitted as it was written.
TEST(RestoreConfig, CheckpointLayersTakesABoolOrACount) {
  const std::vector<std::pair<std::string, int64_t>> spellings{
      {"true", model::kRecomputeAll}, {"false", 0}, {"0", 0}, {"20", 20}};
  for (const auto& [text, count] : spellings) {
    const train::RestoreConfig c = load(std::string(kBase) + "checkpoint_layers: " + text + "\n");
    EXPECT_EQ(c.checkpoint_layers, count) << text;
    const std::string yaml = train::restore_config_to_yaml(c);
    const std::string emitted = text == "0" ? "false" : text;
    EXPECT_NE(yaml.find("checkpoint_layers: " + emitted + "\n"), std::string::npos) << yaml;
    EXPECT_EQ(load(yaml).checkpoint_layers, count) << text;
  }
  EXPECT_EQ(load(kBase, {"checkpoint_layers=12"}).checkpoint_layers, 12);
  for (const char* bad : {"-3", "some", "[1]", "1.5"})
    EXPECT_NE(load_error(std::string(kBase) + "checkpoint_layers: " + bad + "\n")
                  .find("config key 'checkpoint_layers' must be true, false or a number of layers >= 0"),
              std::string::npos)
        << bad;
}

TEST(RestoreConfig, DataEntriesNameTheirTextField) {
  const std::string base = "teacher: t\nstudent_rope: {rope_type: linear, factor: 4}\noutput: o\n";
  train::RestoreConfig c = load(base + "data: a.txt\n");
  ASSERT_EQ(c.data.size(), 1u);
  EXPECT_EQ(c.data[0].path, "a.txt");
  EXPECT_EQ(c.data[0].field, "text");
  c = load(base + "data: [{path: a.jsonl, field: content}, b.txt, {path: c.json}]\n");
  ASSERT_EQ(c.data.size(), 3u);
  EXPECT_EQ(c.data[0].path, "a.jsonl");
  EXPECT_EQ(c.data[0].field, "content");
  EXPECT_EQ(c.data[1].field, "text");
  EXPECT_EQ(c.data[2].path, "c.json");
  const std::string yaml = train::restore_config_to_yaml(c);
  EXPECT_NE(yaml.find("data: [{path: a.jsonl, field: content}, b.txt, c.json]\n"), std::string::npos) << yaml;
  EXPECT_EQ(train::restore_config_to_yaml(load(yaml)), yaml);
  c = load(base + "data: [a.txt]\n", {"data=[{path: d.jsonl, field: meta.body}]"});
  EXPECT_EQ(c.data[0].field, "meta.body");
  EXPECT_NE(load_error(base + "data: [a.txt, {path: b.jsonl, fild: x}]\n").find("unknown config key 'data[1].fild'"),
            std::string::npos);
  EXPECT_NE(load_error(base + "data: [{field: x}]\n").find("config key 'data[0].path' is required"), std::string::npos);
  EXPECT_NE(load_error(base + "data: [[a.txt]]\n").find("config key 'data[0]' must be a file path or a map"),
            std::string::npos);
}

TEST(RestoreConfig, EnumsNameTheirValuesInErrors) {
  EXPECT_NE(load_error(kBase, {"method=distill"}).find("config key 'method' must be ard, cpt or longred, got 'distill'"),
            std::string::npos);
  EXPECT_NE(load_error(kBase, {"trainable=lora"}).find("must be qkv, lora_qkv, lora_all or full, got 'lora'"),
            std::string::npos);
  EXPECT_NE(load_error(kBase, {"objective.relations=maps"}).find("config key 'objective.relations' must be qkv or attention"),
            std::string::npos);
  EXPECT_NE(load_error(kBase, {"device=tpu"}).find("config key 'device' must be auto, cpu or cuda"), std::string::npos);
  EXPECT_NE(load_error(kBase, {"dtype=fp16"}).find("config key 'dtype' must be auto, fp32 or bf16"), std::string::npos);
}

TEST(RestoreConfig, UnknownKeysAreNamedAtEveryLevel) {
  EXPECT_NE(load_error(std::string(kBase) + "stpes: 3\n").find("unknown config key 'stpes'"), std::string::npos);
  EXPECT_NE(load_error(kBase, {"objective.bogus=1"}).find("unknown config key 'objective.bogus'"), std::string::npos);
  EXPECT_NE(load_error(kBase, {"lr.x=1"}).find("config key 'lr' has no sub-keys"), std::string::npos);
  const std::string rope = load_error(kBase, {"student_rope.fctor=2"});
  EXPECT_NE(rope.find("unknown config key 'student_rope.fctor'"), std::string::npos) << rope;
  EXPECT_NE(rope.find("factor"), std::string::npos) << rope;
  // Each type takes transformers' keys: yarn's beta_fast is fine there, not in a linear dict.
  EXPECT_EQ(load_error(kBase, {"student_rope={rope_type: yarn, factor: 4, beta_fast: 32}"}), "");
  EXPECT_NE(load_error(kBase, {"student_rope.beta_fast=32"}).find("'student_rope.beta_fast'"), std::string::npos);
  EXPECT_NE(load_error(kBase, {"student_rope.rope_type=bogus"}).find("config key 'student_rope.rope_type'"),
            std::string::npos);
}

TEST(RestoreConfig, HfStyleAliases) {
  const train::RestoreConfig c =
      load("model_name_or_path: t\nstudent_rope: {rope_type: linear, factor: 4}\ndata: [d]\noutput_dir: o\n"
           "learning_rate: 0.001\ngradient_accumulation_steps: 4\n");
  EXPECT_EQ(c.teacher, "t");
  EXPECT_EQ(c.output, "o");
  EXPECT_EQ(c.lr, 0.001);
  EXPECT_EQ(c.grad_accum, 4);
  // An override replaces either spelling; two spellings in one place are an error naming both.
  EXPECT_EQ(load(std::string(kBase) + "lr: 0.5\n", {"learning_rate=0.25"}).lr, 0.25);
  const std::string both = load_error(std::string(kBase) + "lr: 0.5\nlearning_rate: 0.25\n");
  EXPECT_NE(both.find("'learning_rate' and 'lr' (line 5) are two spellings of config key 'lr'"), std::string::npos) << both;
  EXPECT_NE(load_error(kBase, {"output=a", "output_dir=b"}).find("two spellings of config key 'output'"), std::string::npos);
}

TEST(RestoreConfig, ValidationKeysParseAndRoundTrip) {
  const train::RestoreConfig c = load(std::string(kBase) + "val_blocks: 4\nval_passkey: {lengths: [4096, 8192], samples: 10}\n"
                                                           "select: {criterion: kl, passkey_margin: 0.2}\ndeterministic: true\n"
                                                           "stage2: {steps: 1, data: [long.txt]}\n");
  EXPECT_EQ(c.val_blocks, 4);
  EXPECT_EQ(c.val_passkey.lengths, (std::vector<int64_t>{4096, 8192}));
  EXPECT_EQ(c.val_passkey.depths.size(), 5u);
  EXPECT_EQ(c.select.criterion, train::Select::kKl);
  EXPECT_TRUE(c.deterministic);
  ASSERT_EQ(c.stage2.data.size(), 1u);
  const std::string yaml = train::restore_config_to_yaml(c);
  EXPECT_EQ(train::restore_config_to_yaml(load(yaml)), yaml);
  EXPECT_NE(yaml.find("val_passkey: {lengths: [4096, 8192], samples: 10, depths: [0, 0.25, 0.5, 0.75, 1]}"), std::string::npos) << yaml;
  EXPECT_NE(load_error(std::string(kBase) + "val_passkey: {lengths: [0]}\n").find("config key 'val_passkey.lengths' must be >= 1"),
            std::string::npos);
  EXPECT_NE(load_error(std::string(kBase) + "stage2: {data: [x.txt]}\n").find("config key 'stage2.data' applies to stage 2 only"),
            std::string::npos);
  EXPECT_NE(load_error(std::string(kBase) + "select: {criterion: best}\n").find("must be kl_passkey, kl or last"), std::string::npos);
}

TEST(RestoreConfig, RecipeAppliesUnderTheFilesKeys) {
  const train::RestoreConfig c = load(std::string(kBase) + "recipe: paper\nlr: 1e-3\nstage2: {steps: 3}\n");
  EXPECT_EQ(c.recipe, "paper");
  EXPECT_EQ(c.lr, 1e-3);                // the file's
  EXPECT_EQ(c.checkpoint_layers, model::kRecomputeAll);  // the recipe's `true`
  EXPECT_EQ(c.stage2.lr, 2e-5);         // the recipe's, beside the file's stage2.steps
  EXPECT_EQ(c.stage2.steps, 3);
  EXPECT_EQ(load(kBase, {"recipe=paper", "lr=5e-4"}).lr, 5e-4);
  EXPECT_EQ(load(kBase, {"recipe=paper"}).lr, 2e-5);
  const std::string unknown = load_error(kBase, {"recipe=nosuch"});
  EXPECT_NE(unknown.find("config key 'recipe' names no bundled recipe: 'nosuch' (bundled: paper)"), std::string::npos) << unknown;
  // Every bundled recipe is a valid config under the base keys.
  for (const auto& [name, text] : train::restore_recipes()) EXPECT_EQ(load_error(kBase, {"recipe=" + name}), "") << name;
}

TEST(RestoreConfig, KeyListCoversEveryEmittedKey) {
  const std::string table = train::restore_config_keys_markdown();
  for (const auto& k : train::restore_config_keys()) {
    EXPECT_FALSE(k.doc.empty()) << k.key;
    EXPECT_NE(table.find("| `" + k.key + "`"), std::string::npos) << k.key;
  }
  EXPECT_NE(table.find("| `lr` (alias `learning_rate`) | `2.0e-05` |"), std::string::npos) << table;
}

}  // namespace
