// HeldGradients: the trainables' gradients held in the compute dtype until the update, then applied
// a few units at a time by the fused AdamW.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/train/fused_adamw.h"

namespace linear_ard::train {

// Why: an update made of one backward (no micro-batches to accumulate, no ranks to average) hands
// each cast of the fp32 trainables one gradient in the compute dtype, so its fp32 gradient is that
// one cast up, exactly. Holding the bf16 one instead halves the gradients' memory (with LoRA r 1024
// on q/k/v at the LLaMA-2-7B shape, 3.2 of the step's 26 GB), and the update clips and applies them
// a few units at a time: the clipped values, the norm and the update are those of the fp32
// gradients (docs/training.md, "Memory").
//
// A unit is a set of fp32 leaves whose compute-dtype copy one cast makes (a MasterBuffer unit, a
// LoRA factor); its gradient is held flat, the leaves' elements back to back in their order.
class HeldGradients : public torch::CustomClassHolder {
 public:
  // Registers a unit of `leaves` (fp32, requiring grad); returns its index for held_cast.
  int64_t unit_add(std::vector<torch::Tensor> leaves);
  // Holds `grad` (the unit's compute-dtype gradient, any shape of its numel) for unit `unit`; a
  // second gradient of one unit before the update is a logic error (nothing here accumulates).
  void hold(int64_t unit, const torch::Tensor& grad);
  // The held gradients (flat, compute dtype), of the units that got one.
  std::vector<torch::Tensor> held() const;
  // For each unit holding a gradient: hands it to optimizer.step_held with `coef` (the clipping,
  // applied when coef < 1) as its leaves' gradients, a few units a call: once the units so given
  // would hold `step_bytes` of fp32 gradients (and after the last), which bounds the fp32 copy where
  // step_held casts up (CPU; on CUDA its kernel reads the held gradients as they are). Nothing is
  // held after; the leaves get no .grad.
  void apply(FusedAdamW& optimizer, double coef, int64_t step_bytes = kApplyBytes);
  // fp32 gradient bytes an optimizer step takes at least (but the last): few steps (launches and
  // host time) for small models, a bounded fp32 copy for large ones (a 7B layer's q|k|v is 201 MB).
  static constexpr int64_t kApplyBytes = int64_t{256} << 20;
  // Lets every held gradient go (a step that will not be applied).
  void clear();

 private:
  struct Unit {
    std::vector<torch::Tensor> leaves;
    torch::Tensor grad;  // flat, compute dtype; undefined until backward reaches the unit's cast
  };
  std::vector<Unit> units_;
};

// `source` (fp32, no gradient needed) cast to `dtype`, differentiable: backward holds its gradient
// in unit `unit` of `held` and hands its leaves none (`leaves`, the unit's, are inputs only so that
// autograd runs the node; they get their gradients from HeldGradients::apply).
torch::Tensor held_cast(const torch::Tensor& source, at::TensorList leaves, torch::ScalarType dtype,
                        const c10::intrusive_ptr<HeldGradients>& held, int64_t unit);

}  // namespace linear_ard::train
