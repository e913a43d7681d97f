// `linear-ard restore CONFIG.yaml [key=value ...]`: LinearARD restoration of a RoPE-scaled student
// from its native-RoPE teacher, its ablations and baselines, optional stage-2 CPT (docs/restore.md).
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "linear_ard/eval/restore_validation.h"  // defines: restore_passkey_validator
#include "linear_ard/train/restore_config.h"   // defines: restore_config_load, restore_config_keys_markdown
#include "linear_ard/train/restore_trainer.h"  // defines: restore_run
#include "plot_run.h"                       // defines: plot_training_curves
#include "tensorboard_run.h"                 // defines: tensorboard_follow_start

namespace linear_ard::cli {

void restore_with_followers(const train::RestoreConfig& config) {
  const auto tensorboard = tensorboard_follow_start(config.output, config.tensorboard);
  train::restore_run(config, eval::restore_passkey_validator());
  if (tensorboard) tensorboard->finish();
  plot_training_curves(config.output);
}

void command_restore_register(CLI::App& app) {
  auto config_path = std::make_shared<std::string>();
  auto overrides = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand(
      "restore", "Distil the final layer's Q/Q, K/K, V/V relations of a native-RoPE teacher into its "
                 "RoPE-scaled copy (or run an ablation / the CPT and LongReD baselines, then optional "
                 "stage-2 CPT); writes an HF folder, metrics, curves (scripts/plot.py) and the resolved config");
  sub->add_option("CONFIG", *config_path, "YAML config (configs/demo_cpu.yaml shows every key)")
      ->check(CLI::ExistingFile);
  sub->add_option("overrides", *overrides, "key=value overrides, e.g. steps=50 student_rope.factor=4");
  auto list_keys = std::make_shared<bool>(false);
  sub->add_flag("--list-keys", *list_keys, "print every config key (default, meaning) as a Markdown table and exit");
  sub->callback([config_path, overrides, list_keys] {
    if (*list_keys) {
      std::cout << train::restore_config_keys_markdown();
      return;
    }
    if (config_path->empty()) throw CLI::RequiredError("CONFIG");
    const train::RestoreConfig config = train::restore_config_load(*config_path, *overrides);
    if (config.pretrain.enabled())
      throw std::invalid_argument("config key 'pretrain' belongs to `linear-ard pretrain`, not restore");
    restore_with_followers(config);
  });
}

}  // namespace linear_ard::cli
