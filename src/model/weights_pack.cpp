// weights_pack: a layer's q/k/v and gate/up weights packed back to back in one storage at load.
#include "linear_ard/model/weights_pack.h"

namespace linear_ard::model {
namespace {

// Replaces the tensors named `names` (all present) by views of one packed copy.
void pack_rows(std::map<std::string, torch::Tensor>& tensors, const std::vector<std::string>& names) {
  std::vector<torch::Tensor> ts;
  for (const auto& n : names) ts.push_back(tensors.at(n));
  if (!weights_stackable(ts) || weights_rows_view(ts)) return;
  const torch::Tensor packed = torch::cat(ts, 0);
  int64_t offset = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    tensors[names[i]] = packed.narrow(0, offset, ts[i].size(0));
    offset += ts[i].size(0);
  }
}

}  // namespace

std::optional<torch::Tensor> weights_rows_view(const std::vector<torch::Tensor>& ts) {
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

bool weights_stackable(const std::vector<torch::Tensor>& ts) {
  for (const auto& t : ts)
    if (t.scalar_type() != ts.front().scalar_type() || t.device() != ts.front().device() ||
        t.dim() != ts.front().dim() || t.sizes().slice(1) != ts.front().sizes().slice(1))
      return false;
  return true;
}

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

}  // namespace linear_ard::model
