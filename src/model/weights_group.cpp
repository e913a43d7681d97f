// weights_group: the one-GEMM linear over a group of modules.
#include "linear_ard/model/weights_group.h"

#include <stdexcept>

#include "linear_ard/model/linear_recast.h"  // defines: linear_recast
#include "linear_ard/model/weights_pack.h"   // defines: weights_rows_view, weights_stackable

namespace linear_ard::model {
namespace {

// The tensors `ts` (one part, ".weight" or ".bias", of a group whose first tensor is `first`)
// stacked by rows: the overrides' stacked tensor, a view where they lie back to back, else their
// concatenation.
torch::Tensor rows_stacked(const Overrides& overrides, const std::string& first, const std::vector<torch::Tensor>& ts) {
  if (const auto it = overrides.stacked.find(first); it != overrides.stacked.end()) {
    int64_t rows = 0;
    for (const torch::Tensor& t : ts) rows += t.size(0);
    if (it->second.size(0) != rows)
      throw std::invalid_argument("weights_linear_group: stacked override " + first + " has " +
                                  std::to_string(it->second.size(0)) + " rows, its group's tensors " +
                                  std::to_string(rows));
    return it->second;
  }
  if (auto view = weights_rows_view(ts)) return *view;
  return torch::cat(ts, 0);
}

}  // namespace

torch::Tensor weights_linear_group(const LlamaWeights& weights, const Overrides& overrides,
                                   const std::vector<std::string>& modules, const torch::Tensor& x,
                                   const NormedInput* x_from) {
  std::vector<torch::Tensor> ws, bs;
  bool lora = false;
  for (const auto& m : modules) {
    lora = lora || overrides.lora.count(m) > 0;
    ws.push_back(weights_get(weights, overrides, m + ".weight"));
    if (auto b = weights_find(weights, overrides, m + ".bias")) bs.push_back(*b);
  }
  const bool biases_ok = bs.empty() || (bs.size() == ws.size() && weights_stackable(bs));
  if (lora || !biases_ok || !weights_stackable(ws)) {
    std::vector<torch::Tensor> outs;
    for (const auto& m : modules) outs.push_back(weights_linear(weights, overrides, m, x, x_from));
    return torch::cat(outs, -1);
  }
  const std::string& first = modules.front();
  const auto source = overrides.stacked_sources.find(first + ".weight");
  return linear_recast(x, rows_stacked(overrides, first + ".weight", ws),
                       source != overrides.stacked_sources.end() ? source->second : torch::Tensor(),
                       bs.empty() ? torch::Tensor() : rows_stacked(overrides, first + ".bias", bs), x_from);
}

}  // namespace linear_ard::model
