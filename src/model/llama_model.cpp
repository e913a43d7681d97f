// The decoder stack: embeddings, per-layer attention + SwiGLU with pre-RMSNorm residuals, final
// norm and LM head, plus the hooks relation distillation needs (QKV capture, early stop).
#include "linear_ard/model/llama_model.h"

#include <stdexcept>
#include <tuple>

#include "linear_ard/model/activation_recompute.h"
#include "linear_ard/model/mlp.h"
#include "linear_ard/model/rms_norm.h"

namespace linear_ard::model {
namespace {

std::string layer_prefix(int64_t layer) { return "model.layers." + std::to_string(layer); }

int64_t layer_index(int64_t layer, int64_t num_layers) {
  const int64_t i = layer < 0 ? layer + num_layers : layer;
  if (i < 0 || i >= num_layers)
    throw std::out_of_range("model: layer " + std::to_string(layer) + " out of range for " +
                            std::to_string(num_layers) + " layers");
  return i;
}

// Everything one decoder layer needs besides its input; copied into checkpoint closures.
struct LayerContext {
  const LlamaWeights* weights;
  Overrides overrides;
  RopeCosSin rope;
  AttentionMask mask;
  int64_t layer;
};

// The layer's input norm and Q/K/V projection; the projection may make its normed input again in
// backward from `hidden` (linear_recast's NormedInput) instead of keeping it.
LayerQkv layer_qkv(const LayerContext& ctx, const torch::Tensor& hidden) {
  const LlamaWeights& w = *ctx.weights;
  const std::string p = layer_prefix(ctx.layer);
  const NormedInput in{hidden, weights_get(w, ctx.overrides, p + ".input_layernorm.weight"), w.config.rms_norm_eps};
  return attention_qkv(w, ctx.overrides, p + ".self_attn", rms_norm(in.input, in.weight, in.eps), ctx.rope, &in);
}

torch::Tensor decoder_layer(const LayerContext& ctx, const torch::Tensor& hidden, KvCache* cache,
                            LayerQkv* capture) {
  const LlamaWeights& w = *ctx.weights;
  const std::string p = layer_prefix(ctx.layer);
  const double eps = w.config.rms_norm_eps;
  LayerQkv qkv = layer_qkv(ctx, hidden);
  if (capture) *capture = qkv;
  auto k = qkv.k, v = qkv.v;
  if (cache) std::tie(k, v) = kv_cache_append(*cache, ctx.layer, k, v);
  const auto attn = attention_output(w, ctx.overrides, p + ".self_attn", qkv.q, k, v, ctx.mask);
  const auto [h, post] =
      add_rms_norm(hidden, attn, weights_get(w, ctx.overrides, p + ".post_attention_layernorm.weight"), eps);
  return h + mlp_forward(w, ctx.overrides, p + ".mlp", post);
}

// o without the casts' fp32 sources: its linears keep their casts for backward (linear_recast's
// plain path).
Overrides sources_dropped(Overrides o) {
  o.sources.clear();
  o.stacked_sources.clear();
  for (auto& [module, lora] : o.lora) lora.a_source = lora.b_source = torch::Tensor();
  return o;
}

// decoder_layer under activation recomputation. The closure holds this layer's weights only, which
// activation_recompute lets go of after the layer's backward, so each layer's cast of the
// trainables is freed as backward passes it; `overrides`' deferred casts of the layer (`prefix`) are
// made each time the layer runs and live only while it does. Its linears keep their casts: the
// rerun's backward follows it at once, so casting again there would only add work.
torch::Tensor decoder_layer_recomputed(const LayerContext& ctx, const Overrides& overrides, const std::string& prefix,
                                       const torch::Tensor& hidden) {
  auto fn = [ctx, deferred = overrides.deferred, prefix](const torch::Tensor& x) {
    LayerContext made = ctx;
    if (deferred) {
      made.overrides.deferred = deferred;
      made.overrides = overrides_layer(made.overrides, prefix);
    }
    made.overrides = sources_dropped(std::move(made.overrides));
    return decoder_layer(made, x, nullptr, nullptr);
  };
  return activation_recompute_apply(fn, hidden, overrides_trainable(overrides, prefix));
}

}  // namespace

ModelOutputs model_forward(const LlamaWeights& weights, const RopeTables& rope,
                           const Overrides& overrides, const torch::Tensor& ids,
                           const ForwardOptions& options) {
  const ModelConfig& c = weights.config;
  const int64_t num_layers = c.num_hidden_layers;
  TORCH_CHECK(ids.dim() == 2 && ids.scalar_type() == torch::kLong, "model: ids must be int64 [B, n]");
  const int64_t n = ids.size(1);
  const int64_t past = options.cache ? kv_cache_length(*options.cache) : 0;
  const bool fixed = options.cache && options.cache->fixed;
  TORCH_CHECK(!fixed || (n == 1 && !options.attention_mask && !options.position_ids),
              "model: a fixed-capacity KV cache takes one token per step, with no attention_mask or position_ids");

  std::vector<bool> capture(num_layers, false);
  for (int64_t l : options.capture_qkv_layers) capture[layer_index(l, num_layers)] = true;
  int64_t last_layer = num_layers - 1;
  if (options.stop_after_qkv_layer) {
    last_layer = layer_index(*options.stop_after_qkv_layer, num_layers);
    capture[last_layer] = true;
  }

  auto embed = weights_get(weights, overrides, "model.embed_tokens.weight");
  torch::Tensor hidden = torch::embedding(embed, ids);
  RopeCosSin cos_sin =
      fixed ? kv_cache_fixed_rope(*options.cache)
            : rope_cos_sin(rope,
                           options.position_ids ? *options.position_ids
                                                : (torch::arange(n, ids.options()) + past).unsqueeze(0),
                           hidden.scalar_type());

  // One mask per distinct window (full attention and at most one sliding size in practice).
  std::map<int64_t, AttentionMask> masks;
  auto mask_for = [&](int64_t layer) -> const AttentionMask& {
    auto window = model_config_layer_window(c, layer);
    const int64_t key = window.value_or(-1);
    if (!masks.count(key)) {
      TORCH_CHECK(!fixed || !window, "model: a fixed-capacity KV cache does not take sliding-window layers");
      masks.emplace(key, fixed ? AttentionMask{kv_cache_fixed_visible(*options.cache), false}
                               : attention_mask_build(n, past, options.attention_mask, window, ids.device()));
    }
    return masks.at(key);
  };

  ModelOutputs out;
  if (options.output_hidden_states) out.hidden_states.push_back(hidden);
  for (int64_t layer = 0; layer <= last_layer; ++layer) {
    const std::string prefix = layer_prefix(layer) + ".";
    const bool needs_graph = torch::GradMode::is_enabled() &&
                             (hidden.requires_grad() || !overrides_trainable(overrides, prefix).empty());
    const bool recompute = layer < options.recompute_layers && needs_graph && !capture[layer] && !options.cache;
    // This layer's entries only (deferred ones made now, except for a recomputed layer: it makes
    // them when it runs, forward and again backward).
    LayerContext ctx{&weights, recompute ? overrides_under(overrides, prefix) : overrides_layer(overrides, prefix),
                     cos_sin, mask_for(layer), layer};
    if (options.stop_after_qkv_layer && layer == last_layer) {
      out.qkv[layer] = layer_qkv(ctx, hidden);
      return out;
    }
    if (recompute) {
      hidden = decoder_layer_recomputed(ctx, overrides, prefix, hidden);
    } else {
      LayerQkv qkv;
      hidden = decoder_layer(ctx, hidden, options.cache, capture[layer] ? &qkv : nullptr);
      if (capture[layer]) out.qkv[layer] = qkv;
    }
    if (options.output_hidden_states) out.hidden_states.push_back(hidden);
  }

  hidden = rms_norm(hidden, weights_get(weights, overrides, "model.norm.weight"), c.rms_norm_eps);
  out.last_hidden_state = hidden;
  if (options.output_hidden_states) out.hidden_states.back() = hidden;
  if (options.compute_logits) {
    auto head_in = options.logits_last_only ? hidden.narrow(1, n - 1, 1) : hidden;
    out.logits = weights_linear(weights, overrides, "lm_head", head_in);
  }
  return out;
}

}  // namespace linear_ard::model
