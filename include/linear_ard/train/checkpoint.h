// checkpoint: a training run's resumable state (trainable tensors, AdamW state, schedule
// position, data position, RNG), written atomically as <output>/checkpoint-<step>/ (restore and
// pretrain runs; config keys `checkpoint_every`, `resume`). In file and function names
// "checkpoint" means only this: HF weights are io/hf_weights, activation recomputation (config key
// `checkpoint_layers`) is model/activation_recompute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "linear_ard/train/trainable_set.h"

namespace linear_ard::train {

struct CheckpointState {
  int64_t step = 0;             // global optimizer step (stage 2 continues stage 1's count)
  int64_t stage = 1;            // the stage that step belongs to
  int64_t stage_step = 0;       // the stage's own step count (its LR schedule position)
  int64_t blocks_consumed = 0;  // training blocks the stage has read (its data position)
  int64_t tokens = 0;           // tokens trained so far, all stages
  double train_s = 0;           // training time so far
  int64_t world_size = 1;       // data-parallel ranks of the run (its data shards depend on it)
  std::string config_yaml;      // the run's resolved config, to refuse resuming another run
};

// Writes state.json, trainable.safetensors (fp32), optimizer.pt (libtorch archive) and
// rng.safetensors (torch's CPU generator, and the current CUDA device's where CUDA is available)
// into checkpoint-<step>.tmp and renames it to checkpoint-<step> (a reader sees a whole checkpoint
// or none). Older checkpoints stay until checkpoint_prune: the trainer keeps the last one known
// good until the new one is.
void checkpoint_save(const std::string& output, const CheckpointState& state, const TrainableSet& trainables,
                     torch::optim::Optimizer& optimizer);

// Removes every checkpoint of `output` but checkpoint-<keep_step>.
void checkpoint_prune(const std::string& output, int64_t keep_step);
// Removes checkpoint-<step> of `output` (one that led to a divergence).
void checkpoint_remove(const std::string& output, int64_t step);

// The newest complete checkpoint folder of `output`, if any; leftover *.tmp folders of an
// interrupted save are removed.
std::optional<std::string> checkpoint_latest(const std::string& output);

CheckpointState checkpoint_state_read(const std::string& folder);

// Loads the trainable tensors (in place), the optimizer state and the generators' states.
void checkpoint_restore(const std::string& folder, TrainableSet& trainables, torch::optim::Optimizer& optimizer);

}  // namespace linear_ard::train
