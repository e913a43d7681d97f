// tune_budget: the tokens a restore config trains, by the run's own accounting (training_summary.json's
// tokens_trained), and the factor on its steps that makes them `linear-ard tune --budget`'s. Private
// to src/train.
#pragma once

#include <cstdint>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// N_tok = sum_s L_s B_s A_s U_s of `c` in one process (tune runs no rank but one): ctx_len 0 read
// as the run reads it (the teacher's max_position_embeddings; stage 2's, the student's), a stage of
// 0 steps 0 tokens.
int64_t tune_tokens(const RestoreConfig& c);

// The factor on `c`'s steps that makes it train `budget` tokens (before rounding the steps).
double tune_budget_factor(const RestoreConfig& c, int64_t budget);

}  // namespace linear_ard::train
