// restore_run: stage 1 of LinearARD (paper Sec. 3.4): the RoPE-scaled student's Q/K/V projections
// trained to match the frozen native-RoPE teacher's final-layer Q/Q, K/K, V/V relations.
#pragma once

#include "linear_ard/train/restore_config.h"
#include "linear_ard/train/run_validator.h"

namespace linear_ard::train {

// Runs `config` end to end. Everything that can be checked before training (teacher folder, RoPE,
// ctx_len within the teacher's native range, data, output folder) is checked before the output
// folder is created. Then writes into config.output: resolved_config.yaml, metrics.jsonl (one line
// per step, plus a validation line before training, every eval_every steps and after each stage:
// the held-out relation diagnostics, the KL to the native model and both perplexities on the
// validation blocks, and `validator`'s passkey retrieval when config.val_passkey asks for it),
// training_summary.json, and the restored HF folder model/ (atomic) holding the weights of the
// validation config.select chooses. A diverged run (a NaN/Inf loss or gradient, caught before that
// update is applied; a loss far above its stage's first; a non-finite validation) writes the
// choice among the validations before it and throws std::runtime_error naming the step.
// `linear-ard pretrain` has its own driver over the same phases (pretrain_trainer.h).
void restore_run(const RestoreConfig& config, const RunValidator& validator = {});

}  // namespace linear_ard::train
