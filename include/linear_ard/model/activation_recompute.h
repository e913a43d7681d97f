// activation_recompute: activation recomputation ("activation checkpointing") for C++ autograd:
// run a function without keeping its activations and rerun it in backward (libtorch has no
// torch.utils.checkpoint).
#pragma once

#include <functional>
#include <vector>

#include <torch/torch.h>

namespace linear_ard::model {

using RecomputedFn = std::function<torch::Tensor(const torch::Tensor&)>;

// fn(input) whose backward recomputes fn. `params` are every tensor fn reads that needs a gradient
// (trainable overrides): autograd only sees them through this list. fn must be
// deterministic given the random generators' states: the CPU generator's (and the input device's)
// are kept at forward and restored for the recomputation, so dropout masks repeat.
torch::Tensor activation_recompute_apply(const RecomputedFn& fn, const torch::Tensor& input,
                               const std::vector<torch::Tensor>& params);

}  // namespace linear_ard::model
