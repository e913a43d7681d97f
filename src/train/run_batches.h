// Batches of a training run: blocks of token ids as tensors on the device, and the micro-batch
// source one optimizer step draws from. Private to src/train.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/io/tokenizer.h"
#include "run_stage_spec.h"

namespace linear_ard::train {

// Equal-length blocks as ids [blocks, n] (int64) on `device`; to a GPU from pinned memory without
// a stream synchronisation, so the host can queue a step's kernels while the previous step's run.
torch::Tensor ids_tensor(const std::vector<std::vector<int32_t>>& blocks, const torch::Device& device);

// The micro-batch source of one step of `stage`: its next blocks (mixed with stage.mix), their
// LM-loss weights left in `batch_weights` (undefined when no block has any). `drawn` is the stage's
// block index (block_mix), advanced by each draw; everything is read by reference at each call.
std::function<torch::Tensor()> batch_source(const StageSpec& stage, const io::Tokenizer& tokenizer,
                                            const torch::Device& device, torch::Tensor& batch_weights, int64_t& drawn);

}  // namespace linear_ard::train
