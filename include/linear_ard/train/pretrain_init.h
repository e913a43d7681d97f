// pretrain_init: the randomly initialised HF folder a `linear-ard pretrain` run starts from.
#pragma once

#include <cstdint>

#include "linear_ard/io/hf_folder.h"
#include "linear_ard/io/tokenizer.h"
#include "linear_ard/train/pretrain_config.h"

namespace linear_ard::train {

// config.json from `config.model` (a map or a config.json path) completed with what the tokenizer
// knows (vocab_size, bos/eos ids) and LLaMA defaults (architectures, model_type, hidden_act),
// `config.init_std` as initializer_range; weights normal(0, init_std), RMSNorm weights 1, biases 0,
// drawn from a generator seeded with `seed`, in `config.save_dtype`; the tokenizer folder's files.
// Throws std::invalid_argument naming the key (`pretrain.model.hidden_size`, ...) at fault.
io::HfFolder pretrain_folder_init(const PretrainConfig& config, const io::Tokenizer& tokenizer, uint64_t seed);

}  // namespace linear_ard::train
