// pretrain_init: the randomly initialised HF folder a `linear-ard pretrain` run starts from.
#pragma once

#include <cstdint>

#include "linear_ard/io/hf_folder.h"
#include "linear_ard/io/tokenizer.h"
#include "linear_ard/train/pretrain_config.h"

namespace linear_ard::train {

// The folder without weights: config.json from `config.model` (a map or a config.json path)
// completed with what the tokenizer knows (vocab_size, bos/eos ids) and LLaMA defaults
// (architectures, model_type, hidden_act), `config.init_std` as initializer_range; the tokenizer
// folder's files. Throws std::invalid_argument naming the key (`pretrain.model.hidden_size`, ...).
io::HfFolder pretrain_folder_config(const PretrainConfig& config, const io::Tokenizer& tokenizer);

// Its weights: normal(0, init_std), RMSNorm weights 1, biases 0, drawn from a generator seeded with
// `seed`, in `config.save_dtype` (a shape whose parameters cannot fit refused before any is drawn).
void pretrain_folder_weights(io::HfFolder& folder, const PretrainConfig& config, uint64_t seed);

}  // namespace linear_ard::train
