// RunValidator: what a restore run's validation asks of the layers above train: passkey retrieval
// of the student as it stands (eval's restore_validation.h supplies it; train may not include
// eval). The KL to the native model and both perplexities are train's own (native_kl.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"
#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// The student at one validation: the shared weights with the trainables' overrides (evaluation
// mode: no dropout) under the student's RoPE, on `device`; valid for the call only.
struct ValidationView {
  const model::LlamaWeights& weights;    // weights.config is the teacher's
  const model::ModelConfig& student_config;
  const model::RopeTables& rope;
  const model::Overrides& overrides;
  torch::Device device;
  torch::ScalarType dtype;
  std::string tokenizer_folder;          // the teacher's folder: its tokenizer
  std::vector<int64_t> passkey_lengths;  // resolved val_passkey.lengths; never empty
  const ValPasskeyConfig& passkey;       // samples (> 0) and depths
  int64_t step = 0, stage = 1;
};

// Named metrics merged into the validation record: {"passkey": {"<length>": accuracy, ...},
// "passkey_mean": accuracy} (lengths it could not evaluate left out). The same prompts at every
// call, so that the validations of a run compare.
using RunValidator = std::function<nlohmann::json(const ValidationView& view)>;

}  // namespace linear_ard::train
