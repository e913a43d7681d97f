// pretrain_eval: held-out next-token loss of the model being pretrained.
#pragma once

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"

namespace linear_ard::train {

struct PretrainEval {
  double loss_lm = 0;     // mean next-token cross-entropy over the held-out blocks (nats)
  double perplexity = 0;  // exp(loss_lm)
};

// No gradients; ids [B, n] are the held-out blocks, evaluated one at a time.
PretrainEval pretrain_evaluate(const model::LlamaWeights& weights, const model::RopeTables& rope,
                               const model::Overrides& overrides, const torch::Tensor& ids);

}  // namespace linear_ard::train
