// StageSpec: one stage of a training run: its optimisation settings, loss and data (paper Eq.
// token_budget: L_s, B_s, A_s, U_s), and the run's token budget over its stages. Private to
// src/train.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/train/block_mix.h"
#include "linear_ard/train/restore_step.h"
#include "linear_ard/train/text_blocks.h"

namespace linear_ard::train {

struct StageSpec {
  int64_t stage = 1;
  int64_t ctx_len = 0, batch_size = 1, grad_accum = 1, steps = 0, warmup_steps = 0;
  double lr = 0, min_lr_ratio = 0;
  StageLoss loss;
  TextBlocks* blocks = nullptr;
  BlockMix mix;  // stage 1 only

  // Tokens one optimizer step trains on over `world` ranks: L_s B_s A_s G.
  int64_t tokens_per_step(int64_t world) const { return ctx_len * batch_size * grad_accum * world; }
};

// The token budget N_tok = sum_s L_s B_s A_s U_s G, per stage and in all, as training_summary.json
// records it.
nlohmann::json token_budget(const std::vector<StageSpec>& stages, int64_t world);

}  // namespace linear_ard::train
