// weights_dtype_check: samples of 16-bit matrices read as declared and as the other format.
#include "linear_ard/model/weights_dtype_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace linear_ard::model {
namespace {

// How a sample of a matrix's values looks: their RMS and the share of them below RMS / 20.
// Trained (or dequantized) weights have 3-5 % of their values that small; the bytes of one 16-bit
// format read as the other have either none (BF16 read as F16: magnitudes 2^-16..2 land in [0.47, 2]) or nearly
// all (F16 read as BF16: magnitudes near 2^-60, a few large ones setting the RMS).
struct WeightsSample {
  double rms = 0;
  double small_share = 0;
};

constexpr int64_t kSample = 4096;     // values read of a matrix
constexpr int64_t kMinValues = 1024;  // smaller matrices are left alone: too few values to judge

// The checkpoint's name of a 16-bit float dtype (safetensors' header spelling).
const char* header_name(torch::ScalarType dtype) { return dtype == torch::kHalf ? "F16" : "BF16"; }

bool implausible(const WeightsSample& s) {
  if (!std::isfinite(s.rms)) return true;
  if (s.rms == 0) return false;  // all zeros: nothing to tell from
  return (s.small_share < 0.005 && s.rms > 0.25) || s.small_share > 0.5;
}

bool plausible(const WeightsSample& s) {
  return std::isfinite(s.rms) && s.rms > 0 && s.rms <= 4 && s.small_share >= 0.005 && s.small_share <= 0.5;
}

std::string sample_text(const WeightsSample& s) {
  char text[96];
  std::snprintf(text, sizeof text, "RMS %.3g with %.1f %% near zero", s.rms, 100 * s.small_share);
  return text;
}

// The sample of `values` (any float dtype): up to 4096 values evenly spaced over the tensor.
WeightsSample weights_sample(const torch::Tensor& values) {
  const torch::Tensor flat = values.reshape({-1});
  const int64_t step = std::max<int64_t>(1, flat.numel() / kSample);
  torch::Tensor x = flat.slice(0, 0, flat.numel(), step).to(torch::kDouble);
  x = x.masked_select(x.isfinite());
  WeightsSample s;
  if (x.numel() == 0) return {std::nan(""), 0};
  s.rms = x.square().mean().sqrt().item<double>();
  s.small_share = x.abs().lt(s.rms / 20).to(torch::kDouble).mean().item<double>();
  return s;
}

}  // namespace

std::optional<std::string> weights_dtype_swapped(const std::map<std::string, torch::Tensor>& tensors) {
  for (const auto& [name, t] : tensors) {
    const torch::ScalarType dtype = t.scalar_type();
    if ((dtype != torch::kHalf && dtype != torch::kBFloat16) || t.dim() != 2 || t.numel() < kMinValues) continue;
    const torch::ScalarType other = dtype == torch::kHalf ? torch::kBFloat16 : torch::kHalf;
    const WeightsSample declared = weights_sample(t);
    if (!implausible(declared)) continue;
    const WeightsSample swapped = weights_sample(t.contiguous().view(other));
    if (!plausible(swapped)) continue;
    return "tensor " + name + " is stored as " + header_name(dtype) + ", but its values read so have " +
           sample_text(declared) + ", and the same bytes read as " + header_name(other) + " have " +
           sample_text(swapped) + ", as trained weights do: the file's header names the wrong dtype (" +
           header_name(other) + " data under " + (dtype == torch::kHalf ? "an " : "a ") + header_name(dtype) +
           " header)";
  }
  return std::nullopt;
}

}  // namespace linear_ard::model
