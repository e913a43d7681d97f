// The next-token cross-entropy of an LM head without the [positions, vocab] logits: the positions
// go through the head in chunks, each chunk's logits (in the model dtype) live only while its
// log-softmax (fp32), its loss terms and its gradients are computed, and the gradients of the
// hidden states and of the head's weight are formed in the same pass (the loss ends the graph, so
// the backward only scales them by the upstream gradient). At 32K positions and a 49K vocabulary
// the logits alone are 3.2 GB in bf16 and 6.4 GB in fp32; here a chunk is about 2^27 logits.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"  // defines: LlamaWeights, Overrides

namespace linear_ard::model {

// A target that takes no part in the loss (torch's cross_entropy default).
constexpr int64_t kLmIgnoreIndex = -100;

struct LmHeadLoss {
  // fp32 scalar: sum_i w_i CE_i / sum_i w_i over the positions whose target is not kLmIgnoreIndex
  // (w_i = 1 without token weights: the mean), differentiable in the hidden states and the head's
  // weight and bias; NaN when no position counts (as torch's mean over nothing).
  torch::Tensor loss;
  // [N] fp32, detached: CE_i = logsumexp(z_i) - z_i[target_i], 0 at ignored positions.
  torch::Tensor token_ce;
};

// On raw tensors: hidden [N, h] and weight [V, h] in one floating dtype (the model's), bias [V] or
// undefined, targets [N] int64 in [0, V) or kLmIgnoreIndex, token_weights [N] (any floating dtype)
// or undefined. chunk_rows: positions per chunk, 0 = about 2^27 / V. Equals, to the model dtype's
// rounding, cross_entropy(linear(hidden, weight, bias).float(), targets) weighted as above, and
// its gradients; throws c10::Error naming the argument on a bad shape or dtype.
LmHeadLoss lm_head_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                                 const torch::Tensor& targets, const torch::Tensor& token_weights = {},
                                 int64_t chunk_rows = 0);

// The positions lm_head_cross_entropy puts in one chunk when chunk_rows is 0 (about 2^27 / vocab,
// at most `positions`): what the memory plans count (train/run_memory.cpp).
int64_t lm_head_chunk_rows(int64_t positions, int64_t vocab);

// The same over a model's LM head ("lm_head.weight", the embeddings when tied, overrides'
// replacements) for hidden [..., h] after the final norm and targets of the same leading shape
// (token_weights too, when defined). Throws std::invalid_argument for a LoRA adapter on lm_head
// (the trainable sets never put one there).
LmHeadLoss lm_head_loss(const LlamaWeights& weights, const Overrides& overrides, const torch::Tensor& hidden,
                        const torch::Tensor& targets, const torch::Tensor& token_weights = {});

}  // namespace linear_ard::model
