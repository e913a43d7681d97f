// hf_fused: Phi-3's fused qkv_proj / gate_up_proj split into the model's q/k/v and gate/up tensors
// on load and joined back on save.
#include "linear_ard/io/hf_fused.h"

#include <stdexcept>
#include <vector>

#include "linear_ard/model/model_family.h"  // defines: model_family_of

namespace linear_ard::io {
namespace {

// One fused tensor of a layer: its name's module, the separate modules in row order, and each
// part's rows.
struct FusedGroup {
  std::string fused;
  std::vector<std::string> parts;
  std::vector<int64_t> rows;
  std::string rows_text;  // how config.json gives the fused rows, for errors
};

std::vector<FusedGroup> fused_groups(const model::ModelConfig& c, int64_t layer) {
  const std::string p = "model.layers." + std::to_string(layer);
  const int64_t d = model::model_config_head_dim(c), h = c.num_attention_heads, kv = c.num_key_value_heads;
  const int64_t f = c.intermediate_size;
  return {{p + ".self_attn.qkv_proj", {p + ".self_attn.q_proj", p + ".self_attn.k_proj", p + ".self_attn.v_proj"},
           {h * d, kv * d, kv * d},
           "(" + std::to_string(h) + " + 2 x " + std::to_string(kv) + ") x " + std::to_string(d)},
          {p + ".mlp.gate_up_proj", {p + ".mlp.gate_proj", p + ".mlp.up_proj"}, {f, f},
           "2 x " + std::to_string(f)}};
}

bool fused_family(const model::ModelConfig& c) { return model::model_family_of(c).fused_projections; }

}  // namespace

void hf_fused_split(const model::ModelConfig& config, TensorMap& tensors) {
  if (!fused_family(config)) return;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const FusedGroup& g : fused_groups(config, layer)) {
      for (const char* part : {".weight", ".bias"}) {
        const auto it = tensors.find(g.fused + part);
        if (it == tensors.end()) continue;
        const torch::Tensor fused = it->second;
        int64_t rows = 0;
        for (int64_t r : g.rows) rows += r;
        if (fused.dim() < 1 || fused.size(0) != rows)
          throw std::runtime_error(g.fused + part + " has shape " + c10::str(fused.sizes()) + ", config.json implies " +
                                   g.rows_text + " = " + std::to_string(rows) + " rows");
        tensors.erase(it);
        int64_t offset = 0;
        for (size_t i = 0; i < g.parts.size(); ++i) {
          tensors[g.parts[i] + part] = fused.narrow(0, offset, g.rows[i]);
          offset += g.rows[i];
        }
      }
    }
  }
}

TensorMap hf_fused_join(const model::ModelConfig& config, const TensorMap& tensors) {
  if (!fused_family(config)) return tensors;
  TensorMap out = tensors;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const FusedGroup& g : fused_groups(config, layer)) {
      for (const char* part : {".weight", ".bias"}) {
        std::vector<torch::Tensor> pieces;
        for (const std::string& name : g.parts)
          if (const auto it = out.find(name + part); it != out.end()) pieces.push_back(it->second);
        if (pieces.empty()) continue;
        if (pieces.size() != g.parts.size())
          throw std::runtime_error("cannot write " + g.fused + part + ": some of its parts are missing");
        out[g.fused + part] = torch::cat(pieces, 0);
        for (const std::string& name : g.parts) out.erase(name + part);
      }
    }
  }
  return out;
}

std::string hf_fused_name(const model::ModelConfig& config, const std::string& name) {
  if (!fused_family(config)) return name;
  static const std::vector<std::pair<std::string, std::string>> renames = {
      {".self_attn.q_proj.", ".self_attn.qkv_proj."}, {".self_attn.k_proj.", ".self_attn.qkv_proj."},
      {".self_attn.v_proj.", ".self_attn.qkv_proj."}, {".mlp.gate_proj.", ".mlp.gate_up_proj."},
      {".mlp.up_proj.", ".mlp.gate_up_proj."}};
  for (const auto& [part, fused] : renames)
    if (const size_t at = name.find(part); at != std::string::npos)
      return name.substr(0, at) + fused + name.substr(at + part.size());
  return name;
}

}  // namespace linear_ard::io
