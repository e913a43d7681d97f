// `linear-ard pretrain CONFIG.yaml [key=value ...]`: a LLaMA-architecture model trained from random
// initialisation with the restore trainer (LM loss, every tensor), optionally with passkey-retrieval
// samples mixed in so that the model retrieves at its native length (docs/pretrain.md).
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "linear_ard/eval/passkey.h"           // defines: passkey_prompt_make
#include "linear_ard/train/restore_config.h"   // defines: restore_config_load
#include "linear_ard/train/restore_trainer.h"  // defines: restore_run

namespace linear_ard::cli {
namespace {

// The passkey prompt `linear-ard eval passkey` asks (eval/passkey.cpp), at a random depth, followed
// by its answer " <key>." and EOS: the text the model should produce after the question. The answer
// is encoded with the prompt, so its tokens are the ones the model sees in running text. Empty when
// even a prompt without filler exceeds max_tokens.
std::vector<int32_t> passkey_sample(const io::Tokenizer& tokenizer, int64_t max_tokens, uint64_t seed) {
  // Room for " " + 5 digits + "." (at most 7 pieces) and EOS after the prompt.
  constexpr int64_t answer_budget = 8;
  std::mt19937_64 rng(seed);
  const double depth = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  const uint64_t prompt_seed = rng();
  eval::PasskeyPrompt p;
  try {
    p = eval::passkey_prompt_make(tokenizer, max_tokens - answer_budget, depth, prompt_seed);
  } catch (const std::invalid_argument&) {
    return {};  // too short for the prompt even without filler: the block stays corpus text
  }
  std::vector<int32_t> ids = tokenizer.encode(p.text + " " + p.passkey + ".", /*add_special_tokens=*/true);
  if (tokenizer.eos_id() >= 0) ids.push_back(tokenizer.eos_id());
  if (static_cast<int64_t>(ids.size()) > max_tokens)
    throw std::logic_error("passkey sample of " + std::to_string(ids.size()) + " tokens exceeds " + std::to_string(max_tokens));
  return ids;
}

}  // namespace

void command_pretrain_register(CLI::App& app) {
  auto config_path = std::make_shared<std::string>();
  auto overrides = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand(
      "pretrain", "Train a LLaMA-architecture model from random initialisation (shape in pretrain.model, "
                  "tokenizer in pretrain.tokenizer) with the next-token loss at its native context; writes an "
                  "HF folder, metrics, curves and the resolved config");
  sub->add_option("CONFIG", *config_path, "YAML config (configs/pretrain_demo.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("overrides", *overrides, "key=value overrides, e.g. steps=50 pretrain.model.hidden_size=128");
  sub->callback([config_path, overrides] {
    const train::RestoreConfig config = train::restore_config_load(*config_path, *overrides);
    if (!config.pretrain.enabled())
      throw std::invalid_argument("config key 'pretrain.model' is required by `linear-ard pretrain` (the new model's "
                                  "config.json keys, or a config.json path)");
    train::restore_run(config, passkey_sample);
  });
}

}  // namespace linear_ard::cli
