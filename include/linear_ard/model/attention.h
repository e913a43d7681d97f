// Grouped-query self-attention pieces: the QKV projection with RoPE (what relation distillation
// reads), the attention mask (causal, padding, sliding window, KV-cache offset), and SDPA.
#pragma once

#include <optional>
#include <string>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"

namespace linear_ard::model {

// Post-RoPE projections exactly as HF's attention holds them after apply_rotary_pos_emb:
// q [B, H, n, d]; k, v [B, Hkv, n, d] (before the GQA repeat).
struct LayerQkv {
  torch::Tensor q, k, v;
};

// Either "causal, let SDPA derive it" (mask unset, is_causal) or an explicit boolean mask
// [B or 1, 1, n, kv_len] with true where a key is visible.
struct AttentionMask {
  std::optional<torch::Tensor> mask;
  bool is_causal = true;
};

// Mask for n queries at absolute positions past_len.. past_len+n-1 over past_len + n keys.
// `padding` is HF's attention_mask [B, past_len + n] (nonzero = real token); `window` keeps key j
// for query i only if i - window < j (HF's sliding_window_overlay).
AttentionMask attention_mask_build(int64_t q_len, int64_t past_len,
                                   const std::optional<torch::Tensor>& padding,
                                   std::optional<int64_t> window, torch::Device device);

// x (already normed) [B, n, hidden] -> post-RoPE Q, K, V of the attention block `prefix`
// ("model.layers.3.self_attn"). `x_from`: what x is the RMSNorm of (linear_recast).
LayerQkv attention_qkv(const LlamaWeights& weights, const Overrides& overrides, const std::string& prefix,
                       const torch::Tensor& x, const RopeCosSin& rope, const NormedInput* x_from = nullptr);

// softmax(q k^T / sqrt(d) + mask) v with K/V heads repeated for GQA, then o_proj: [B, n, hidden].
torch::Tensor attention_output(const LlamaWeights& weights, const Overrides& overrides,
                               const std::string& prefix, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v,
                               const AttentionMask& mask);

}  // namespace linear_ard::model
