// weights_place: checkpoint tensors moved onto the device and dtype a model runs in, after checking
// that they fit there and before anyone computes with them, checked finite. Shared by evaluation
// and training (restore's teacher, pretrain's initial model).
#pragma once

#include <map>
#include <string>

#include <torch/torch.h>

namespace linear_ard::model {

// Each of `tensors` on `device` in `dtype`. Before allocating: their parameters against the
// device's free memory (memory_fit_check, naming `owner`), and no 16-bit matrix holding the other
// 16-bit format's bytes (weights_dtype_swapped). After: every placed tensor finite, else
// std::invalid_argument "<owner> has non-finite weights: <name> (<n> NaN, <m> Inf of <numel>
// values), <name> (finite as stored, overflows bf16), ...; refusing to <use> them", listing every
// such tensor.
std::map<std::string, torch::Tensor> weights_place(const std::map<std::string, torch::Tensor>& tensors,
                                                   torch::Device device, torch::ScalarType dtype,
                                                   const std::string& owner, const std::string& use);

}  // namespace linear_ard::model
