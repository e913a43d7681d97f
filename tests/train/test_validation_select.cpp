// The model a run keeps: validation_select's rule on constructed records, and a restore run of the
// demo model with a scripted validator (its passkey accuracies chosen per step) that must write,
// as model/, exactly the weights of the validation the criterion picks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "linear_ard/io/safetensors.h"            // defines: safetensors_load
#include "linear_ard/train/restore_config.h"      // defines: restore_config_load
#include "linear_ard/train/restore_trainer.h"     // defines: restore_run
#include "linear_ard/train/validation_select.h"   // defines: validation_select

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace linear_ard;
using train::Select;

json record(int64_t step, double kl, double passkey) {
  return {{"step", step}, {"val_kl", kl}, {"passkey_mean", passkey}};
}

TEST(ValidationSelect, KlPasskeyTakesTheLowestKlWithinTheMarginOfTheBestRetrieval) {
  const std::vector<json> records = {record(0, 0.9, 0.1), record(10, 0.2, 0.3), record(20, 0.4, 0.8),
                                     record(30, 0.35, 0.75), record(40, 0.5, 0.85)};
  // Best passkey 0.85; within 0.1: steps 20, 30, 40; the lowest KL of those is step 30's.
  EXPECT_EQ(train::validation_select(records, Select::kKlPasskey, 0.1), 3u);
  EXPECT_EQ(train::validation_select(records, Select::kKlPasskey, 0.6), 1u);  // step 10 within the margin
  EXPECT_EQ(train::validation_select(records, Select::kKlPasskey, 0.0), 4u);
  EXPECT_EQ(train::validation_select(records, Select::kKl, 0.1), 1u);
  EXPECT_EQ(train::validation_select(records, Select::kLast, 0.1), 4u);
  EXPECT_FALSE(train::validation_select({}, Select::kKl, 0.1));
  const std::string why = train::validation_select_why(records, 3, Select::kKlPasskey, 0.1);
  EXPECT_EQ(why, "the lowest val_kl (0.35) of the 3 of 5 validations whose passkey_mean is within 0.1 of the best (0.85)");
}

TEST(ValidationSelect, WithoutPasskeyItIsTheLowestKlAndTiesGoToRetrievalThenToTheEarlierStep) {
  const std::vector<json> plain = {{{"step", 0}, {"val_kl", 0.5}}, {{"step", 5}, {"val_kl", 0.25}}, {{"step", 9}, {"val_kl", 0.25}}};
  EXPECT_EQ(train::validation_select(plain, Select::kKlPasskey, 0.1), 1u);
  const std::vector<json> tied = {record(0, 0.25, 0.5), record(5, 0.25, 0.7)};
  EXPECT_EQ(train::validation_select(tied, Select::kKl, 0.1), 1u);
  // 0.85 - 0.1 is 0.75 up to rounding: within the margin.
  EXPECT_EQ(train::validation_select({record(0, 0.1, 0.75), record(1, 0.2, 0.85)}, Select::kKlPasskey, 0.1), 0u);
}

// A restore of the demo model (PI x4, 24 steps, validations at 0, 8, 16, 24) whose validator
// returns the scripted passkey accuracy of each step and keeps the q_proj weights it saw.
struct ScriptedRun {
  json summary;
  std::map<int64_t, torch::Tensor> seen;  // step -> layer 3's q_proj weight at its validation
  torch::Tensor written;                  // the same tensor in model/
};

ScriptedRun scripted_run(const std::string& name, const std::map<int64_t, double>& passkey, const std::string& criterion) {
  const fs::path dir = fs::temp_directory_path() / ("validation_select_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream((dir / "config.yaml").string())
      << "teacher: " << LINEAR_ARD_DEMO_MODEL << "\nstudent_rope: {rope_type: linear, factor: 4}\ndata: ["
      << LINEAR_ARD_DEMO_DATA << "]\nctx_len: 64\nsteps: 24\nlr: 3.0e-3\neval_every: 8\nval_blocks: 2\n"
      << "val_passkey: {lengths: [256], samples: 5}\nselect: {criterion: " << criterion << "}\n"
      << "device: cpu\ndtype: fp32\nlog_every: 100\noutput: " << (dir / "out").string() << "\n";
  const train::RestoreConfig config = train::restore_config_load((dir / "config.yaml").string());
  ScriptedRun run;
  const std::string q = "model.layers.3.self_attn.q_proj.weight";
  train::restore_run(config, [&](const train::ValidationView& view) {
    run.seen[view.step] = view.overrides.replace.at(q).detach().clone();
    EXPECT_EQ(view.passkey_lengths, std::vector<int64_t>{256});
    return json{{"passkey", {{"256", passkey.at(view.step)}}}, {"passkey_mean", passkey.at(view.step)}};
  });
  std::ifstream in((dir / "out" / "training_summary.json").string());
  run.summary = json::parse(in);
  run.written = io::safetensors_load((dir / "out" / "model" / "model.safetensors").string()).at(q);
  EXPECT_FALSE(fs::exists(dir / "out" / "selection"));
  return run;
}

// model/ holds the bf16 cast of the fp32 weights the validation of `step` saw.
void expect_model_of_step(const ScriptedRun& run, int64_t step) {
  ASSERT_EQ(run.summary.at("validation").at("chosen_step").get<int64_t>(), step);
  EXPECT_TRUE(torch::equal(run.written, run.seen.at(step).to(run.written.scalar_type()))) << "step " << step;
}

TEST(ValidationSelect, TheRunWritesTheChosenValidationsWeights) {
  // Step 16 alone is within 0.1 of the best retrieval: kl_passkey must keep it, whatever the KLs.
  const std::map<int64_t, double> passkey = {{0, 0.0}, {8, 0.2}, {16, 1.0}, {24, 0.4}};
  const ScriptedRun kl_passkey = scripted_run("kl_passkey", passkey, "kl_passkey");
  expect_model_of_step(kl_passkey, 16);
  const json& records = kl_passkey.summary.at("validation").at("records");
  ASSERT_EQ(records.size(), 4u);
  for (const json& r : records)
    for (const char* k : {"step", "stage", "tokens", "val_kl", "val_ppl", "native_ppl", "passkey", "passkey_mean"})
      EXPECT_TRUE(r.contains(k)) << k;

  // kl: the lowest val_kl of the records (the same training, so the same KLs).
  const ScriptedRun kl = scripted_run("kl", passkey, "kl");
  int64_t lowest = 0;
  double best = 1e300;
  for (const json& r : kl.summary.at("validation").at("records"))
    if (r.at("val_kl").get<double>() < best) best = r.at("val_kl").get<double>(), lowest = r.at("step").get<int64_t>();
  expect_model_of_step(kl, lowest);
  EXPECT_EQ(kl.summary.at("validation").at("records"), records);

  expect_model_of_step(scripted_run("last", passkey, "last"), 24);
}

}  // namespace
