// diagnose_relation_kl: the Q/Q, K/K, V/V relation KL of chosen layers between the native model and
// a scaled one on the same blocks, through ops::relation_loss (diagnose's relation columns).
#pragma once

#include <cstdint>
#include <vector>

#include "linear_ard/eval/diagnose.h"
#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"

namespace linear_ard::eval {

// `weights` under `native` (the teacher) and under `scaled` (the student), no overrides, on
// `blocks` (all of one length) `batch_size` at a time on `device`: each layer's three relation KLs
// (causal, as LinearARD's loss), the mean over blocks. Only the layers up to the last of `layers`
// are computed (the forward stops after its Q/K/V projection); no gradients.
DiagnoseRelation diagnose_relation_kl(const model::LlamaWeights& weights, const model::RopeTables& native,
                                      const model::RopeTables& scaled, const std::vector<std::vector<int32_t>>& blocks,
                                      const std::vector<int64_t>& layers, int64_t batch_size,
                                      const torch::Device& device);

}  // namespace linear_ard::eval
