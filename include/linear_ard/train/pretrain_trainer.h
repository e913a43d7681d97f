// pretrain_run: `linear-ard pretrain`: a LLaMA-family model trained from random initialisation
// with the restore trainer's phases (docs/pretrain.md).
#pragma once

#include "linear_ard/train/block_mix.h"
#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// Runs `config` (config.pretrain set) end to end: the model is a random one from pretrain.model
// (pretrain_folder_config, pretrain_folder_weights) keeping its native RoPE, trained whole with the LM loss; held-out LM loss
// and perplexity are evaluated instead of the relation losses; pretrain.passkey_fraction of the
// training blocks end with a sample of `passkey_sample`, whose answer tokens weigh
// pretrain.answer_weight in the LM loss. Outputs, checkpoints and resume as restore_run.
void pretrain_run(const RestoreConfig& config, const SampleMaker& passkey_sample);

}  // namespace linear_ard::train
