// restore_run: stage 1 of LinearARD (paper Sec. 3.4): the RoPE-scaled student's Q/K/V projections
// trained to match the frozen native-RoPE teacher's final-layer Q/Q, K/K, V/V relations.
#pragma once

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// Runs `config` end to end. Everything that can be checked before training (teacher folder, RoPE,
// ctx_len within the teacher's native range, data, output folder) is checked before the output
// folder is created. Then writes into config.output: resolved_config.yaml, metrics.jsonl (one line
// per step, plus eval lines), training_summary.json, and the restored HF folder model/ (atomic).
// A NaN/Inf loss or gradient stops the run with std::runtime_error before that update is applied.
// `linear-ard pretrain` has its own driver over the same phases (pretrain_trainer.h).
void restore_run(const RestoreConfig& config);

}  // namespace linear_ard::train
