// Relation KL by layer between the native and a scaled model.
#include "diagnose_relation.h"

#include <algorithm>

#include "linear_ard/model/llama_model.h"     // defines: model_forward
#include "linear_ard/ops/relation_loss.h"     // defines: relation_loss

namespace linear_ard::eval {

namespace {

// Blocks [b0, b1) as ids [b1 - b0, n] on `device`.
torch::Tensor blocks_ids(const std::vector<std::vector<int32_t>>& blocks, size_t b0, size_t b1,
                         const torch::Device& device) {
  std::vector<torch::Tensor> rows;
  for (size_t b = b0; b < b1; ++b)
    rows.push_back(torch::tensor(std::vector<int64_t>(blocks[b].begin(), blocks[b].end()), torch::kLong));
  return torch::stack(rows).to(device);
}

}  // namespace

DiagnoseRelation diagnose_relation_kl(const model::LlamaWeights& weights, const model::RopeTables& native,
                                      const model::RopeTables& scaled, const std::vector<std::vector<int32_t>>& blocks,
                                      const std::vector<int64_t>& layers, int64_t batch_size,
                                      const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model::ForwardOptions options;
  options.capture_qkv_layers = layers;
  options.stop_after_qkv_layer = *std::max_element(layers.begin(), layers.end());
  ops::RelationLossOptions loss;
  loss.causal = true;
  DiagnoseRelation r;
  r.layers = layers;
  r.q.assign(layers.size(), 0.0);
  r.k.assign(layers.size(), 0.0);
  r.v.assign(layers.size(), 0.0);
  const auto step = static_cast<size_t>(batch_size);
  for (size_t b0 = 0; b0 < blocks.size(); b0 += step) {
    const size_t b1 = std::min(blocks.size(), b0 + step);
    const torch::Tensor ids = blocks_ids(blocks, b0, b1, device);
    const model::ModelOutputs t = model::model_forward(weights, native, model::Overrides{}, ids, options);
    const model::ModelOutputs s = model::model_forward(weights, scaled, model::Overrides{}, ids, options);
    // Every block has the same rows, so the mean over blocks weights each batch by its blocks.
    const double share = static_cast<double>(b1 - b0) / static_cast<double>(blocks.size());
    for (size_t i = 0; i < layers.size(); ++i) {
      const model::LayerQkv& tq = t.qkv.at(layers[i]);
      const model::LayerQkv& sq = s.qkv.at(layers[i]);
      const auto per = ops::relation_loss({sq.q, sq.k, sq.v}, {tq.q, tq.k, tq.v}, loss)
                           .relation_losses.to(torch::kCPU, torch::kDouble);
      r.q[i] += share * per[0].item<double>();
      r.k[i] += share * per[1].item<double>();
      r.v[i] += share * per[2].item<double>();
    }
  }
  return r;
}

}  // namespace linear_ard::eval
