// MasterBuffer: fp32 master copies of trainable checkpoint tensors living as views of one flat
// buffer, cast to the compute dtype a unit at a time, each weights group one cast.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/io/safetensors.h"
#include "linear_ard/model/llama_weights.h"
#include "linear_ard/train/held_gradients.h"

namespace linear_ard::train {

// Why one buffer: the student reads each layer's q|k|v weights (and gate|up) stacked by rows
// (weights_linear_group). Cast tensor by tensor, every step pays a cast per tensor and a
// concatenation per group forward, and as many kernels backward. Here each group's members lie
// back to back in the buffer, so one cast a unit (a group or a lone tensor) gives the stacked group,
// and backward casts each unit's gradient to fp32 once, as its own autograd node: each
// compute-dtype gradient is let go as soon as its unit's fp32 one exists, and each unit's cast is
// freed once the layers that read it have run backward (activation_recompute lets go of its layer's
// weights then). At the LLaMA-2-7B shape with q/k/v trainable this took the step's peak from every
// cast, every compute-dtype gradient and the whole fp32 gradient at once (about 12.8 GB besides the
// masters and moments) to the fp32 gradient and what is left of the casts (docs/training.md,
// "Memory"). Values are those of the per-tensor casts, element for element.
class MasterBuffer {
 public:
  // Copies the checkpoint tensors `names` (converted to fp32) onto `device`. The members of a
  // weights group (weights_groups of layers 0..num_layers-1, weights and biases apart) that are all
  // in `names` lie together in the group's order; every other tensor lies alone.
  MasterBuffer(const std::vector<std::string>& names, const io::TensorMap& checkpoint, int64_t num_layers,
               const torch::Device& device);

  // The masters, in the order of `names`: leaves requiring grad, each a view of the buffer (the
  // optimizer's in-place updates are the buffer's). Their gradients come back as views of their
  // unit's fp32 gradient; a tensor whose unit got no gradient gets none.
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }

  // The masters cast to `dtype`, differentiable: each group stacked in `stacked` (keyed by its
  // first tensor's name) and every tensor by name in `replace` (views of its unit's cast), each
  // with its fp32 source in `stacked_sources` / `sources` (model::linear_recast keeps those). With
  // `held` (whose units 0, 1, ... are this buffer's, registered in the order of unit_masters()),
  // backward holds each unit's gradient there in `dtype` instead of giving the masters theirs.
  // `which`, when set, picks the units cast by their first tensor's name; units whose cast is
  // smaller than `recast_bytes` come without sources.
  model::Overrides overrides(torch::ScalarType dtype, const c10::intrusive_ptr<HeldGradients>& held = {},
                             const std::function<bool(const std::string&)>& which = {},
                             int64_t recast_bytes = 0) const;
  // The masters of each unit, in buffer order (each unit's in its stacking order).
  const std::vector<std::vector<torch::Tensor>>& unit_masters() const { return unit_masters_; }

  // Where the tensors lie: a unit is a group or a lone tensor, a contiguous range of the buffer.
  struct Unit {
    std::vector<size_t> members;  // indices into parameters(), in the order they are stacked
    int64_t offset = 0, numel = 0;
    std::vector<int64_t> sizes;   // the members stacked by rows
  };
  struct Layout : torch::CustomClassHolder {
    std::vector<Unit> units;                      // in buffer order
    std::vector<size_t> unit_of;                  // parameter index -> unit
    std::vector<int64_t> offset_of;               // parameter index -> offset in the buffer
    std::vector<std::vector<int64_t>> sizes_of;   // parameter index -> its shape
  };

 private:
  std::vector<std::string> names_;
  torch::Tensor flat_;  // fp32, no grad: the masters' storage
  c10::intrusive_ptr<Layout> layout_;
  std::vector<torch::Tensor> parameters_;
  std::vector<std::vector<torch::Tensor>> unit_masters_;  // parameters_ by unit, made once
};

}  // namespace linear_ard::train
