// The LLaMA-family decoder forward over shared weights: ForwardOptions in, ModelOutputs out
// (logits, HF-convention hidden states, post-RoPE Q/K/V of chosen layers), with early stop after a
// layer's QKV projection, a KV cache, and activation recomputation.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/attention.h"
#include "linear_ard/model/kv_cache.h"
#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"

namespace linear_ard::model {

// ForwardOptions::recompute_layers for every layer.
inline constexpr int64_t kRecomputeAll = std::numeric_limits<int64_t>::max();

struct ForwardOptions {
  // HF attention_mask [B, past + n]: nonzero for real tokens, 0 for padding.
  std::optional<torch::Tensor> attention_mask;
  // [B or 1, n]; default past + arange(n) as HF's forward does (also with padding).
  std::optional<torch::Tensor> position_ids;
  // Layers (negative counts from the end) whose post-RoPE Q, K, V are returned.
  std::vector<int64_t> capture_qkv_layers;
  // Compute nothing past this layer's Q/K/V (implies capturing it); no logits, no final norm.
  std::optional<int64_t> stop_after_qkv_layer;
  // embeddings, then each layer's output; the last one after the final norm (HF convention).
  bool output_hidden_states = false;
  bool compute_logits = true;
  bool logits_last_only = false;  // logits of the last position only (decoding)
  // How many decoder layers, counting from the first, recompute their forward in backward instead
  // of storing their activations (kRecomputeAll: every one); the others store theirs. Layers whose
  // Q/K/V are captured run normally, so the captured tensors carry gradients.
  int64_t recompute_layers = 0;
  // Read and extended in place when set; positions continue after the cached tokens.
  KvCache* cache = nullptr;
};

struct ModelOutputs {
  torch::Tensor logits;             // [B, n or 1, vocab], model dtype; undefined if not computed
  torch::Tensor last_hidden_state;  // after the final norm; undefined after an early stop
  std::vector<torch::Tensor> hidden_states;
  std::map<int64_t, LayerQkv> qkv;  // by non-negative layer index
};

// ids [B, n] int64 on the weights' device.
ModelOutputs model_forward(const LlamaWeights& weights, const RopeTables& rope,
                           const Overrides& overrides, const torch::Tensor& ids,
                           const ForwardOptions& options = {});

}  // namespace linear_ard::model
