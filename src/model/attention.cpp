// GQA self-attention: QKV projection + RoPE, mask construction, SDPA and output projection.
#include "linear_ard/model/attention.h"

#include <cmath>
#include <limits>

#include "linear_ard/model/fused_rope_qkv.h"  // defines: rope_qkv_fused(_supported)
#include "linear_ard/model/rms_norm.h"         // defines: rms_norm
#include "linear_ard/model/weights_group.h"    // defines: weights_linear_group

namespace linear_ard::model {
namespace {

// [B, n, heads * d] -> [B, heads, n, d]
torch::Tensor split_heads(const torch::Tensor& x, int64_t head_dim) {
  return x.view({x.size(0), x.size(1), -1, head_dim}).transpose(1, 2);
}

// K/V heads repeated so every query head has its own: SDPA's fused CUDA kernels take equal head
// counts, and O(B H n d) extra memory is nothing next to the n x n the kernels avoid.
torch::Tensor repeat_kv(const torch::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const int64_t b = x.size(0), h = x.size(1), n = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, h, groups, n, d}).reshape({b, h * groups, n, d});
}

// One query per row with a mask (decoding on a fixed-capacity cache, decode_graph.h): the scores as
// one fp32-output GEMM over every key, the mask, an fp32 softmax, and the value GEMM on the
// probabilities rounded to the activation dtype (FlashAttention rounds them so too). Both GEMMs run
// in parallel over the whole cache; SDPA's kernels that take a mask give each (batch, head) one
// block that walks all the keys, which at 32K cached keys and 3 K/V heads made a decode step wait on
// 9 blocks. The query heads of K/V head j (j * groups ...) are the rows of its block, as repeat_kv
// orders them, so the cache is read as it is. q [B, H, 1, d], k/v [B, Hkv, T, d], mask [B or 1, 1,
// 1, T] -> [B, 1, H * d].
torch::Tensor attention_one_query(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& mask, double scale) {
  const int64_t b = q.size(0), hkv = k.size(1), groups = q.size(1) / hkv, d = q.size(3), len = k.size(2);
  auto scores = at::bmm(q.reshape({b * hkv, groups, d}), k.reshape({b * hkv, len, d}).transpose(1, 2), torch::kFloat);
  scores = torch::where(mask, scores.mul_(scale).view({b, hkv, groups, len}),
                        -std::numeric_limits<float>::infinity());
  auto probs = scores.softmax(-1).to(v.scalar_type()).view({b * hkv, groups, len});
  return at::bmm(probs, v.reshape({b * hkv, len, d})).view({b, 1, -1});
}

// Qwen3's q/k: each head of q and of k through its RMSNorm (q_norm, k_norm over head_dim) on the
// [B, n, heads, d] view, as Qwen3Attention does before the transpose and RoPE. qkv [B, n, (H + 2 Hkv) d].
LayerQkv attention_qkv_normed(const LlamaWeights& weights, const Overrides& overrides, const std::string& prefix,
                              const torch::Tensor& qkv, const RopeCosSin& rope) {
  const ModelConfig& c = weights.config;
  const int64_t d = model_config_head_dim(c), h = c.num_attention_heads, hkv = c.num_key_value_heads;
  auto parts = qkv.view({qkv.size(0), qkv.size(1), -1, d}).split_with_sizes({h, hkv, hkv}, 2);
  auto q = rms_norm(parts[0], weights_get(weights, overrides, prefix + ".q_norm.weight"), c.rms_norm_eps);
  auto k = rms_norm(parts[1], weights_get(weights, overrides, prefix + ".k_norm.weight"), c.rms_norm_eps);
  return {rope_apply(q.transpose(1, 2), rope), rope_apply(k.transpose(1, 2), rope), parts[2].transpose(1, 2)};
}

}  // namespace

AttentionMask attention_mask_build(int64_t q_len, int64_t past_len,
                                   const std::optional<torch::Tensor>& padding,
                                   std::optional<int64_t> window, torch::Device device) {
  const int64_t kv_len = past_len + q_len;
  if (!padding && !window) {
    if (past_len == 0) return {std::nullopt, true};
    if (q_len == 1) return {std::nullopt, false};  // one new token sees the whole cache
  }
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  auto query_pos = torch::arange(past_len, kv_len, opts).unsqueeze(1);
  auto key_pos = torch::arange(kv_len, opts).unsqueeze(0);
  auto visible = key_pos <= query_pos;
  if (window) visible = visible.logical_and(key_pos > query_pos - *window);
  visible = visible.view({1, 1, q_len, kv_len});
  if (padding) {
    TORCH_CHECK(padding->dim() == 2 && padding->size(1) == kv_len,
                "attention_mask must be [B, past + n] = [B, ", kv_len, "], got ", padding->sizes());
    visible = visible.logical_and(padding->to(device).ne(0).view({padding->size(0), 1, 1, kv_len}));
  }
  return {visible, false};
}

LayerQkv attention_qkv(const LlamaWeights& weights, const Overrides& overrides, const std::string& prefix,
                       const torch::Tensor& x, const RopeCosSin& rope, const NormedInput* x_from) {
  const ModelConfig& c = weights.config;
  const int64_t d = model_config_head_dim(c), h = c.num_attention_heads, hkv = c.num_key_value_heads;
  // One GEMM for q, k and v ([B, n, (H + 2 Hkv) d]), then on CUDA one kernel for the split and RoPE.
  auto qkv =
      weights_linear_group(weights, overrides, {prefix + ".q_proj", prefix + ".k_proj", prefix + ".v_proj"}, x, x_from);
  if (model_config_qk_norm(c)) return attention_qkv_normed(weights, overrides, prefix, qkv, rope);
  if (rope_qkv_fused_supported(qkv, rope)) {
    auto [q, k, v] = rope_qkv_fused(qkv, rope, h, hkv, d);
    return {q, k, v};
  }
  // Elsewhere RoPE once over the q and k heads together.
  auto heads = split_heads(qkv, d);
  // Splits, not slices: the gradient of a split is one concatenation, that of each slice a
  // zero-filled tensor of the whole size.
  auto qk_v = heads.split_with_sizes({h + hkv, hkv}, 1);
  auto q_k = rope_apply(qk_v[0], rope).split_with_sizes({h, hkv}, 1);
  return {q_k[0], q_k[1], qk_v[1]};
}

torch::Tensor attention_output(const LlamaWeights& weights, const Overrides& overrides,
                               const std::string& prefix, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v,
                               const AttentionMask& mask) {
  const ModelConfig& c = weights.config;
  const int64_t groups = c.num_attention_heads / c.num_key_value_heads;
  const double scale = std::pow(static_cast<double>(model_config_head_dim(c)), -0.5);
  // On CUDA without an explicit mask SDPA takes the GQA heads as they are (cuDNN and flash read
  // K/V head h / groups): no repeated copies forward, no reduction of their gradients backward.
  // Elsewhere (CPU, where the outputs stay bitwise HF's; masks, whose kernel lacks GQA) repeated.
  const bool gqa = groups > 1 && q.is_cuda() && !mask.mask;
  if (q.is_cuda() && mask.mask && q.size(2) == 1)
    return weights_linear(weights, overrides, prefix + ".o_proj", attention_one_query(q, k, v, *mask.mask, scale));
  auto out = gqa ? at::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, mask.is_causal, scale, true)
                 : at::scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups), mask.mask, 0.0,
                                                    mask.is_causal && !mask.mask, scale);
  out = out.transpose(1, 2).reshape({q.size(0), q.size(2), -1});
  return weights_linear(weights, overrides, prefix + ".o_proj", out);
}

}  // namespace linear_ard::model
