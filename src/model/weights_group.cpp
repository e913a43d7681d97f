// weights_group: a layer's q/k/v and gate/up weights packed back to back in one storage at load,
// and the one-GEMM linear over a group.
#include "linear_ard/model/weights_group.h"

#include <optional>
#include <stdexcept>

namespace linear_ard::model {
namespace {

// The tensors (stackable) stacked by rows as one view, when they already lie back to back, in
// order, in one storage, contiguous and with no autograd history; nullopt otherwise.
std::optional<torch::Tensor> rows_view(const std::vector<torch::Tensor>& ts) {
  const torch::Tensor& first = ts.front();
  int64_t rows = 0, next = first.storage_offset();
  for (const torch::Tensor& t : ts) {
    if (!t.is_alias_of(first) || !t.is_contiguous() || t.requires_grad() || t.storage_offset() != next)
      return std::nullopt;
    rows += t.size(0);
    next += t.numel();
  }
  std::vector<int64_t> sizes = first.sizes().vec();
  sizes[0] = rows;
  return first.as_strided(sizes, first.strides(), first.storage_offset());
}

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
  if (auto view = rows_view(ts)) return *view;
  return torch::cat(ts, 0);
}

// True when the tensors can be stacked by rows without a dtype promotion or a device move.
bool stackable(const std::vector<torch::Tensor>& ts) {
  for (const auto& t : ts)
    if (t.scalar_type() != ts.front().scalar_type() || t.device() != ts.front().device() ||
        t.dim() != ts.front().dim() || t.sizes().slice(1) != ts.front().sizes().slice(1))
      return false;
  return true;
}

// Replaces the tensors named `names` (all present) by views of one packed copy.
void pack_rows(std::map<std::string, torch::Tensor>& tensors, const std::vector<std::string>& names) {
  std::vector<torch::Tensor> ts;
  for (const auto& n : names) ts.push_back(tensors.at(n));
  if (!stackable(ts) || rows_view(ts)) return;
  const torch::Tensor packed = torch::cat(ts, 0);
  int64_t offset = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    tensors[names[i]] = packed.narrow(0, offset, ts[i].size(0));
    offset += ts[i].size(0);
  }
}

}  // namespace

std::vector<std::vector<std::string>> weights_groups(int64_t layer) {
  const std::string p = "model.layers." + std::to_string(layer);
  return {{p + ".self_attn.q_proj", p + ".self_attn.k_proj", p + ".self_attn.v_proj"},
          {p + ".mlp.gate_proj", p + ".mlp.up_proj"}};
}

void weights_group_pack(const ModelConfig& config, std::map<std::string, torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer)
    for (const auto& modules : weights_groups(layer))
      for (const char* part : {".weight", ".bias"}) {
        std::vector<std::string> names;
        for (const auto& m : modules)
          if (tensors.count(m + part)) names.push_back(m + part);
        if (names.size() == modules.size()) pack_rows(tensors, names);
      }
}

torch::Tensor weights_linear_group(const LlamaWeights& weights, const Overrides& overrides,
                                   const std::vector<std::string>& modules, const torch::Tensor& x) {
  std::vector<torch::Tensor> ws, bs;
  bool lora = false;
  for (const auto& m : modules) {
    lora = lora || overrides.lora.count(m) > 0;
    ws.push_back(weights_get(weights, overrides, m + ".weight"));
    if (auto b = weights_find(weights, overrides, m + ".bias")) bs.push_back(*b);
  }
  const bool biases_ok = bs.empty() || (bs.size() == ws.size() && stackable(bs));
  if (lora || !biases_ok || !stackable(ws)) {
    std::vector<torch::Tensor> outs;
    for (const auto& m : modules) outs.push_back(weights_linear(weights, overrides, m, x));
    return torch::cat(outs, -1);
  }
  const std::string& first = modules.front();
  return torch::nn::functional::linear(x, rows_stacked(overrides, first + ".weight", ws),
                                       bs.empty() ? torch::Tensor() : rows_stacked(overrides, first + ".bias", bs));
}

}  // namespace linear_ard::model
