// weights_dtype_check: whether a checkpoint's 16-bit matrices hold the bytes of the other 16-bit
// float format (BF16 data under an F16 header, or F16 under BF16). The byte sizes agree, so only
// the values can tell: read as declared they look like no trained weight does, read as the other
// format they look like one.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <torch/torch.h>

namespace linear_ard::model {

// The first F16 or BF16 matrix (2-D, 1024 values or more) of `tensors` whose sample read as
// declared is implausible (no value near zero at an RMS above 0.25, or more than half of them near
// zero) while the same bytes read as the other format are plausible (RMS in (0, 4], 0.5 % to 50 %
// near zero): "tensor T is stored as F16, but its values read so have RMS 1.27 with 0.0 % near
// zero, and the same bytes read as BF16 have RMS 0.0671 with 4.9 % near zero, as trained weights
// do: the file's header names the wrong dtype (BF16 data under an F16 header)". Reads a few pages
// of each matrix, never the whole of it.
std::optional<std::string> weights_dtype_swapped(const std::map<std::string, torch::Tensor>& tensors);

}  // namespace linear_ard::model
