// run_memory: the memory plan of a training run, made before the model is built: the frozen
// weights, the trainables' fp32 masters, gradients and AdamW moments (16 bytes a parameter) and
// their copy in the model dtype, and per stage the activations its backward keeps at the stage's
// context x micro-batch (the layers up to the last trainable one for the relation and hidden-state
// objectives; every layer and the logits for the LM loss), with the teacher's forward beside them;
// and the validation's passkey.
// Private to src/train; docs/reliability.md gives the formula and its measured error.
#pragma once

#include <string>
#include <vector>

#include "linear_ard/model/memory_fit.h"
#include "linear_ard/model/model_config.h"
#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// The plan of the stage of `config` that needs the most (a ctx_len of 0: the model's
// max_position_embeddings), for
// `model` in `dtype`, named "<name> stage <s> at ctx <n> x batch <b>"; trainables of layers
// 0..last_trainable_layer. With `passkey_lengths`, the validation's passkey at the longest of them
// (its KV cache and the prompt's forward, beside the weights and the optimizer's state the run
// keeps) is a candidate too, "<name> validation, passkey at <n>"; `cpu`: the KV cache's CPU layout.
// Throws std::invalid_argument for a LoRA rank beyond an adapted matrix.
model::MemoryPlan run_memory_plan(const RestoreConfig& config, const model::ModelConfig& model, torch::ScalarType dtype,
                                  int64_t last_trainable_layer, const std::string& name,
                                  const std::vector<int64_t>& passkey_lengths = {}, bool cpu = false);

}  // namespace linear_ard::train
