// linear_recast: a linear layer whose weight is a cast of a tensor kept anyway (an fp32 master, a
// LoRA factor), which keeps that tensor for backward instead of the cast.
#pragma once

#include <torch/torch.h>

namespace linear_ard::model {

// Why: a linear keeps its weight for backward (the input's gradient reads it). When the weight is
// a trainable's cast to the model dtype, that keeps the cast alive from the layer's forward to its
// backward: at the LLaMA-2-7B shape with q/k/v trainable, 100 MB a stored layer, a fifth of what
// the layer keeps (docs/training.md, "Memory"). The source (the fp32 master) is alive anyway, so
// keeping it costs nothing, and casting it again in backward is one memory-bound pass.
//
// x W^T (+ bias) where `weight` is `source` cast to weight's dtype (the caller's cast, through which
// the weight's gradient flows back to whatever it was cast from). Forward is torch's linear; the
// backward's GEMMs are the ones torch's linear runs backward (the input's gradient dy W, the
// weight's dy^T x, the bias's the sum of dy over rows), on the cast made again: the same values and
// gradients as torch::nn::functional::linear(x, weight, bias). `source` must not change between
// forward and backward (torch's version counter says so if it does). Without a `source`, or where
// the weight needs no gradient, it is torch's linear.
//
// The weight's gradient reads x. Where x is an RMSNorm of a tensor the norm's own backward keeps
// anyway (a decoder layer's residual stream), `x_from` says so: backward makes x again by the same
// rms_norm (the same bits) instead of the forward keeping it, another 32 MB a stored layer at the
// 7B shape.
struct NormedInput {
  torch::Tensor input, weight;  // x = rms_norm(input, weight, eps)
  double eps = 0;
};
torch::Tensor linear_recast(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& source,
                            const torch::Tensor& bias = {}, const NormedInput* x_from = nullptr);

}  // namespace linear_ard::model
