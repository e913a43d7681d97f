// weights_place: memory check, placement and the finite check of checkpoint tensors.
#include "linear_ard/model/weights_place.h"

#include <stdexcept>

#include "linear_ard/model/memory_fit.h"           // defines: memory_fit_check
#include "linear_ard/model/weights_dtype_check.h"  // defines: weights_dtype_swapped

namespace linear_ard::model {
namespace {

std::string dtype_short_name(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kBFloat16: return "bf16";
    case torch::kHalf: return "fp16";
    case torch::kFloat: return "fp32";
    case torch::kDouble: return "fp64";
    default: return c10::toString(dtype);
  }
}

// "" for a finite tensor, else what is wrong with it: its NaN and Inf counts, or (a tensor finite
// as stored) that the cast to `dtype` overflowed.
std::string nonfinite_text(const torch::Tensor& stored, const torch::Tensor& placed, torch::ScalarType dtype) {
  const int64_t bad = placed.numel() - placed.isfinite().sum().item<int64_t>();
  if (bad == 0) return "";
  if (stored.isfinite().all().item<bool>())
    return "finite as stored, " + std::to_string(bad) + (bad == 1 ? " value overflows " : " values overflow ") +
           dtype_short_name(dtype);
  const int64_t nan = placed.isnan().sum().item<int64_t>();
  return std::to_string(nan) + " NaN, " + std::to_string(bad - nan) + " Inf of " + std::to_string(placed.numel()) +
         " values";
}

}  // namespace

std::map<std::string, torch::Tensor> weights_place(const std::map<std::string, torch::Tensor>& tensors,
                                                   torch::Device device, torch::ScalarType dtype,
                                                   const std::string& owner, const std::string& use) {
  double parameters = 0;
  for (const auto& [name, t] : tensors) parameters += static_cast<double>(t.numel());
  memory_fit_check(parameters, dtype, device, owner);
  // F16 and BF16 take the same bytes: a header naming the wrong one passes every size check and
  // gives finite nonsense (a perplexity of 1e43), so the values are sampled before anything runs.
  if (const auto swapped = weights_dtype_swapped(tensors))
    throw std::invalid_argument(owner + ": " + *swapped + "; refusing to " + use + " them");
  std::map<std::string, torch::Tensor> placed;
  std::string broken;
  for (const auto& [name, t] : tensors) {
    torch::Tensor p = t.to(device, dtype);
    if (const std::string bad = nonfinite_text(t, p, dtype); !bad.empty())
      broken += (broken.empty() ? "" : ", ") + name + " (" + bad + ")";
    placed.emplace(name, std::move(p));
  }
  if (!broken.empty())
    throw std::invalid_argument(owner + " has non-finite weights: " + broken + "; refusing to " + use + " them");
  return placed;
}

}  // namespace linear_ard::model
