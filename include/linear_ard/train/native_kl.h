// native_kl_evaluate: the restoration metric (ARCHITECTURE.md): the KL from the native model's
// next-token distribution to the student's on held-out blocks at a short context (0: the student
// predicts as the native model does), with both models' perplexity beside it.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"

namespace linear_ard::train {

struct NativeKl {
  double kl = 0;          // mean over predicted tokens of KL(native || student), nats
  double ppl = 0;         // the student's perplexity on the blocks' next tokens
  double native_ppl = 0;  // the native model's
  int64_t tokens = 0;     // predicted tokens: blocks x (block length - 1)
};

// The native model is `weights` under `native_rope` without overrides; the student is `weights`
// under `student_rope` with `student_overrides`. Each block (all of one length >= 2) predicts its
// tokens 1..n-1; blocks run `batch_size` at a time on `device`, without gradients, and the lm_head
// is applied to chunks of positions, so no [n, vocab] fp32 tensor of a whole block exists at once.
// Per-position KLs and log-likelihoods are summed in fp64. Throws std::invalid_argument for no
// blocks, blocks of unequal length or shorter than 2 tokens, or batch_size < 1.
NativeKl native_kl_evaluate(const model::LlamaWeights& weights, const model::RopeTables& native_rope,
                            const model::RopeTables& student_rope, const model::Overrides& student_overrides,
                            const std::vector<std::vector<int32_t>>& blocks, int64_t batch_size,
                            const torch::Device& device);

}  // namespace linear_ard::train
