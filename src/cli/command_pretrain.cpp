// `linear-ard pretrain CONFIG.yaml [key=value ...]`: a LLaMA-architecture model trained from random
// initialisation with the restore trainer (LM loss, every tensor), optionally with passkey-retrieval
// samples mixed in so that the model retrieves at its native length (docs/pretrain.md).
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "linear_ard/eval/passkey_sample.h"    // defines: passkey_sample_make
#include "linear_ard/train/restore_config.h"   // defines: restore_config_load
#include "linear_ard/train/pretrain_trainer.h" // defines: pretrain_run
#include "plot_run.h"                       // defines: plot_training_curves
#include "tensorboard_run.h"                 // defines: tensorboard_follow_start

namespace linear_ard::cli {

void command_pretrain_register(CLI::App& app) {
  auto config_path = std::make_shared<std::string>();
  auto overrides = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand(
      "pretrain", "Train a LLaMA-architecture model from random initialisation (shape in pretrain.model, "
                  "tokenizer in pretrain.tokenizer) with the next-token loss at its native context; writes an "
                  "HF folder, metrics, curves (scripts/plot.py) and the resolved config");
  sub->add_option("CONFIG", *config_path, "YAML config (configs/pretrain_demo.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("overrides", *overrides, "key=value overrides, e.g. steps=50 pretrain.model.hidden_size=128");
  sub->callback([config_path, overrides] {
    const train::RestoreConfig config = train::restore_config_load(*config_path, *overrides);
    if (!config.pretrain.enabled())
      throw std::invalid_argument("config key 'pretrain.model' is required by `linear-ard pretrain` (the new model's "
                                  "config.json keys, or a config.json path)");
    const auto tensorboard = tensorboard_follow_start(config.output, config.tensorboard);
    train::pretrain_run(config, eval::passkey_sample_make);
    if (tensorboard) tensorboard->finish();
    plot_training_curves(config.output);
  });
}

}  // namespace linear_ard::cli
