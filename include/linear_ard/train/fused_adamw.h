// fused_adamw: libtorch's AdamW with its update done by torch's multi-tensor fused kernel
// (at::_fused_adamw_, what torch.optim.AdamW(fused=True) runs: a few launches per step instead of
// about ten per tensor). Same options, same per-parameter state (AdamWParamState) and the same
// archive format, so a checkpoint written by either loads in the other.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace linear_ard::train {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;

  // One update of every parameter with a gradient (sparse gradients and amsgrad are refused).
  torch::Tensor step(LossClosure closure = nullptr) override;

  // A parameter and its gradient in the model dtype (bf16 / fp16, the parameter's numel; any shape).
  struct HeldGrad {
    torch::Tensor param, grad;
  };
  // One update of the parameters in `given` (others are left as they are, with their state), from
  // their model-dtype gradients times `coef` when coef < 1 (the clipping): the same values as
  // setting grad = given.grad cast to fp32 and scaled, then step(). On CUDA with fp32 parameters
  // and bf16 / fp16 gradients, one kernel reads the gradients where they are
  // (src/train/cuda/adamw_held.cu); elsewhere each gradient is cast up, one list at a time.
  // A parameter of another numel than its gradient, or not in this optimizer, is refused.
  void step_held(const std::vector<HeldGrad>& given, double coef);

  // libtorch's load, then the kernel's step counters are rebuilt from the loaded states.
  void load(torch::serialize::InputArchive& archive) override;

 private:
  // The fused kernel reads each parameter's step count as a float32 tensor on its device; the
  // integer in its AdamWParamState stays the count that save() writes.
  std::map<void*, torch::Tensor> steps_;
};

}  // namespace linear_ard::train
