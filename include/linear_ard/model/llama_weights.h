// Frozen checkpoint tensors shared by every model built on them (LlamaWeights), per-model
// trainable Overrides, and the lookup/linear helpers the layers use to read through both.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "linear_ard/model/linear_recast.h"
#include "linear_ard/model/model_config.h"

namespace linear_ard::model {

// One copy of a checkpoint, by HF names ("model.layers.3.self_attn.q_proj.weight"). The tensors
// never require grad; teacher and student both read them, so a 7B model exists once in memory.
struct LlamaWeights {
  ModelConfig config;
  std::map<std::string, torch::Tensor> tensors;
};

// The first tensor the config implies that `tensors` lacks (a required one) or holds in another
// shape, then the first tensor of `tensors` the config has no place for (a layer beyond
// num_hidden_layers, a name outside the LLaMA-family layout; a tied lm_head.weight and the old RoPE
// buffer rotary_emb.inv_freq are ignored, as transformers does), or nullopt. Enumerates lazily: a
// config claiming 1e12 layers stops at the first layer the checkpoint lacks.
struct WeightsMismatch {
  std::string tensor;
  // "missing tensor <name>", "<name> has shape [..], config implies [..]", "<name> belongs to
  // layer 4, but num_hidden_layers=4 ..." or "unexpected tensor <name>: ..."
  std::string message;
};
std::optional<WeightsMismatch> llama_weights_mismatch(const ModelConfig& config,
                                                     const std::map<std::string, torch::Tensor>& tensors);

// Checks that every tensor the config implies is present with its shape, detaches and freezes them,
// and drops an lm_head.weight that tie_word_embeddings makes redundant. Throws naming the tensor.
// Each layer's q/k/v weights (and biases), and its gate/up weights, are then packed back to back in
// one storage (weights_group_pack; the map keeps their names, as views) so that
// weights_linear_group reads each group with one GEMM.
LlamaWeights llama_weights_from_map(const ModelConfig& config,
                                    std::map<std::string, torch::Tensor> tensors);

// Random weights for a config (normal(0, std), norms at 1) drawn on `device` from torch's
// generator of that device, seeded with `seed`: pretraining, tests and benchmarks. Refuses a config
// whose parameters do not fit the device's free memory (memory_fit_check) before drawing any.
LlamaWeights llama_weights_random(const ModelConfig& config, torch::ScalarType dtype,
                                  torch::Device device, uint64_t seed, double std = 0.02);

// Low-rank update of a linear weight W [out, in]: y += scale * (dropout(x) A^T) B^T, A [r, in],
// B [out, r]. `dropout` > 0 drops the branch's input as PEFT's lora_dropout does in training (each
// module draws its own mask from the input device's generator); 0 in evaluation.
// `a_source` / `b_source`, when set, are what a and b are casts of (linear_recast).
struct LoraAdapter {
  torch::Tensor a, b;
  double scale = 1.0;
  double dropout = 0.0;
  torch::Tensor a_source, b_source;
};

// What one model changes on top of the shared weights, by the same HF names: `replace` swaps a
// tensor for a (typically trainable) one of the same shape; `lora`, keyed by module name
// ("model.layers.0.self_attn.q_proj"), adds a low-rank term without materialising W + BA.
// `stacked`, keyed by the first tensor name of a weights group (weights_groups: a layer's
// "...q_proj.weight" for q|k|v, "...gate_proj.bias" for gate|up biases), holds that group's
// replacements stacked by rows as one tensor, which weights_linear_group reads instead of
// concatenating them; `replace` still holds each member (a view of its rows) for single reads.
// `sources` and `stacked_sources`, keyed as `replace` and `stacked`, hold for an entry that is a
// cast the tensor it was cast from (an fp32 master, without gradient): a linear reading the entry
// keeps that for backward instead of the cast (linear_recast), so the cast lives only while its
// layer runs forward. `deferred`, when set, makes the decoder layers' entries when each layer runs
// (DeferredCasts).
struct DeferredCasts;
struct Overrides {
  std::map<std::string, torch::Tensor> replace;
  std::map<std::string, LoraAdapter> lora;
  std::map<std::string, torch::Tensor> stacked;
  std::map<std::string, torch::Tensor> sources, stacked_sources;
  std::shared_ptr<const DeferredCasts> deferred;
};

// A decoder layer's overrides made when the layer runs rather than before the forward: `cast`
// gives the entries whose names start with a layer's prefix ("model.layers.3."), differentiable
// towards `leaves` of that prefix, the tensors they are made from (fp32 trainables, cast to the
// model dtype). A layer that activation recomputation reruns holds its leaves only and makes its
// entries again in backward, so none of them is kept between its forward and its backward.
struct DeferredCasts {
  std::function<Overrides(const std::string& prefix)> cast;
  std::function<std::vector<torch::Tensor>(const std::string& prefix)> leaves;
};

// The tensor a model sees under `name`: the override if any, else the shared one; nullopt if
// neither exists (optional biases).
std::optional<torch::Tensor> weights_find(const LlamaWeights& weights, const Overrides& overrides,
                                          const std::string& name);
// As weights_find, but throws naming the tensor when it is missing.
torch::Tensor weights_get(const LlamaWeights& weights, const Overrides& overrides,
                          const std::string& name);
// The trainable tensors of `overrides` whose names start with `prefix` (replacements, stacked
// groups and LoRA factors that require grad, then the deferred entries' leaves), in a stable
// order: the inputs activation checkpointing must track.
std::vector<torch::Tensor> overrides_trainable(const Overrides& overrides, const std::string& prefix);
// The entries of `overrides` whose names start with `prefix`: what one layer reads, so that a
// recomputed layer holds only its own weights (the deferred ones are not made: see overrides_layer).
Overrides overrides_under(const Overrides& overrides, const std::string& prefix);
// overrides_under(`overrides`, `prefix`) with the deferred entries of `prefix` made now.
Overrides overrides_layer(const Overrides& overrides, const std::string& prefix);

// x W^T (+ bias) (+ LoRA) for the linear module `module` ("model.layers.0.self_attn.q_proj"); a
// weight with a source in `overrides` is read by linear_recast, with `x_from` (what x is the RMSNorm
// of) where given.
torch::Tensor weights_linear(const LlamaWeights& weights, const Overrides& overrides,
                             const std::string& module, const torch::Tensor& x,
                             const NormedInput* x_from = nullptr);

}  // namespace linear_ard::model
