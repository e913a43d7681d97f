// TrainableSet: what a restore run trains on top of the frozen checkpoint (QKV master copies, LoRA
// adapters, or every tensor), how the student sees it, and how it is saved (merged or as PEFT).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/io/safetensors.h"
#include "linear_ard/model/llama_weights.h"
#include "linear_ard/train/held_gradients.h"
#include "linear_ard/train/master_buffer.h"
#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// The parameters a TrainableSet of `mode` will hold for a model of `config` (layers 0..last_layer),
// counted before any is built (for the memory plan), in doubles. Throws std::invalid_argument
// naming config key 'lora.rank' when a LoRA rank exceeds the smaller side of an adapted matrix (a
// rank beyond it adds no capacity, only memory).
double trainable_parameters_planned(Trainable mode, const LoraConfig& lora, const model::ModelConfig& config,
                                    int64_t last_layer);

class TrainableSet {
 public:
  // `mode` is config key `trainable`. qkv and full keep fp32 master copies of checkpoint tensors
  // (q/k/v_proj weights and biases of layers 0..last_layer, or every tensor of `weights`) as views
  // of one buffer (MasterBuffer);
  // lora_qkv / lora_all add fp32 adapters to q,k,v (and o, gate, up, down) of layers 0..last_layer,
  // A ~ kaiming-uniform(a = sqrt(5)) and B = 0 as PEFT initialises them, from torch's generator.
  TrainableSet(Trainable mode, const LoraConfig& lora, const io::TensorMap& checkpoint,
               const model::LlamaWeights& weights, int64_t last_layer, const torch::Device& device);

  // The fp32 leaves the optimizer updates, in a stable order.
  std::vector<torch::Tensor>& parameters() { return parameters_; }
  // Their names: checkpoint names for replacements, "<module>.lora_A" / ".lora_B" for adapters.
  const std::vector<std::string>& names() const { return names_; }
  int64_t parameter_count() const;

  // The student's view: replacements and adapters cast to `dtype` (differentiable); `training`
  // turns on LoRA dropout (lora.dropout), off for evaluation. `hold`: backward holds the
  // gradients in `dtype` in held() instead of giving the parameters theirs (one backward an update:
  // held_gradients.h). `defer`: the decoder layers' casts are made when each layer runs
  // (model::DeferredCasts), so a recomputed layer keeps none between its forward and backward; the
  // set must outlive the forward's graph.
  model::Overrides overrides(torch::ScalarType dtype, bool training, bool hold = false, bool defer = false) const;
  // Casts of at least this many bytes come with their sources (model::Overrides::sources), which
  // a linear keeps for backward instead of the cast (model::linear_recast). Smaller ones save
  // little and cost a cast and its launch again in backward: SmolLM2-135M's q|k|v (1.1 MB a
  // layer) made its host-bound step 3 % slower for 0.5 of its 6.4 GiB; a LLaMA-2-7B layer's q|k|v
  // (100 MB) and a LoRA r 1024 factor at hidden 4096 (8 MiB) cost it under 1 % (docs/training.md,
  // "Memory").
  static constexpr int64_t kRecastBytes = int64_t{4} << 20;
  void recast_bytes_set(int64_t bytes) { recast_bytes_ = bytes; }
  // The gradients overrides(..., hold = true) made backward hold, a unit a cast.
  HeldGradients& held() { return *held_; }
  // The checkpoint with the trained tensors, each in its checkpoint dtype: replacements as they
  // are, LoRA merged as W + scale * B A (computed in fp32).
  io::TensorMap merged(const io::TensorMap& checkpoint) const;
  // Writes adapter_config.json and adapter_model.safetensors as PEFT's save_pretrained does
  // (keys base_model.model.<module>.lora_A.weight; layers_to_transform when the adapters stop
  // before the last layer; a family's fused modules, Phi-3's qkv_proj and gate_up_proj, each one
  // adapter of the parts' ranks summed, through rank_pattern / alpha_pattern); LoRA modes only.
  void adapters_save(const std::string& folder, const std::string& base_model) const;

  // Parameters by name (fp32, CPU) for checkpoints; state_load copies them back in place so the
  // optimizer keeps its references. Throws naming a missing or mis-shaped tensor.
  io::TensorMap state() const;
  void state_load(const io::TensorMap& state);

 private:
  // The adapters as PEFT holds them for the checkpoint's modules (fused where it fuses).
  struct PeftAdapters {
    io::TensorMap tensors;
    std::vector<std::string> target_modules;
    nlohmann::json rank_pattern = nlohmann::json::object(), alpha_pattern = nlohmann::json::object();
  };
  PeftAdapters peft_adapters() const;
  // overrides() of the tensors whose names `which` picks (all when unset).
  model::Overrides casts(torch::ScalarType dtype, bool training, bool hold,
                         const std::function<bool(const std::string&)>& which) const;

  bool lora_ = false;
  int64_t recast_bytes_ = kRecastBytes;
  LoraConfig lora_config_;
  model::ModelConfig config_;
  std::vector<std::string> target_modules_;  // LoRA: short module names (q_proj, ...)
  std::vector<std::string> modules_;         // LoRA: full module names, one per adapter
  int64_t last_layer_ = 0;                   // adapters cover layers 0..last_layer_
  int64_t num_layers_ = 0;
  std::vector<std::string> names_;
  std::optional<MasterBuffer> masters_;  // qkv / full: the masters' one buffer
  // Its units are the masters' units in buffer order, or each LoRA factor in parameters_' order.
  c10::intrusive_ptr<HeldGradients> held_ = c10::make_intrusive<HeldGradients>();
  std::vector<torch::Tensor> parameters_;
};

}  // namespace linear_ard::train
