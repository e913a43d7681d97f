// RestoreConfig: every setting of `linear-ard restore`, read from YAML plus `key=value` overrides,
// validated with errors naming the key, and written back (defaults filled in) as resolved YAML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/train/pretrain_config.h"

namespace linear_ard::train {

// What stage 1 optimises (paper Sec. 3.4 and Appendix D), `objective.*`.
struct ObjectiveConfig {
  std::string relations = "qkv";  // qkv: Q/Q, K/K, V/V; attention: attention map (Q,K) + V/V
  double logit_kl = 0.0;          // weight of KL(softmax(z_t/T) || softmax(z_s/T)); 0: off
  double temperature = 1.0;       // T of the logit KL
  int64_t last_k_positions = 0;   // logit KL over the last k positions of a block; 0: all
};

// LoRA adapters (trainable: lora_qkv | lora_all), `lora.*`: scale = alpha / rank as in PEFT.
struct LoraConfig {
  int64_t rank = 8;
  double alpha = 16.0;
  double dropout = 0.0;  // PEFT's lora_dropout: on the adapter branch's input, training only
};

// Optional stage 2, light CPT (next-token loss) under the scaled RoPE, `stage2.*`; steps 0: off.
struct Stage2Config {
  int64_t steps = 0;
  int64_t ctx_len = 0;  // 0: the student's max_position_embeddings (may exceed the native range)
  int64_t batch_size = 1;
  int64_t grad_accum = 1;
  double lr = 2e-5;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.1;
};

struct RestoreConfig {
  std::string teacher;               // HF folder of the native-RoPE model (required unless pretraining)
  nlohmann::json student_rope;       // HF rope dict of the student, e.g. {rope_type: linear, factor: 8}
  std::vector<std::string> data;     // text, JSONL (`text` field) or .npy token files (required)
  std::string method = "ard";        // ard (LinearARD), cpt (LM loss), longred (hidden-state cosine)
  nlohmann::json layers = "last:1";  // "last:k", "all" or a list of layer indices (negative from the end)
  ObjectiveConfig objective;
  std::string trainable = "qkv";     // qkv | lora_qkv | lora_all | full
  LoraConfig lora;
  bool save_adapters = false;        // also write the LoRA adapters alone in PEFT's format
  int64_t longred_max_skip = 1;      // longred: student position ids = teacher's x U{1..max_skip}
  Stage2Config stage2;
  int64_t ctx_len = 0;               // block length; 0: the teacher's max_position_embeddings
  int64_t batch_size = 1;
  int64_t grad_accum = 1;
  int64_t steps = 100;               // optimizer updates
  double lr = 2e-5;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.1;         // cosine decay ends at min_lr_ratio * lr
  double weight_decay = 0.0;
  double clip_grad_norm = 5.0;       // 0: no clipping (the norm is still measured and checked)
  double lambda_q = 1.0;
  double lambda_k = 1.0;
  double lambda_v = 1.0;
  uint64_t seed = 0;
  std::string device = "auto";       // cpu, cuda, or auto (cuda when available)
  std::string dtype = "auto";        // fp32, bf16, or auto (bf16 on cuda, fp32 on cpu)
  bool checkpoint_layers = false;    // recompute the student's layers in backward
  std::string output;                // output folder (required)
  bool overwrite = false;            // replace an existing non-empty output folder
  int64_t eval_every = 0;            // 0: evaluate only before the first and after the last step
  int64_t log_every = 1;
  int64_t checkpoint_every = 0;      // 0: no checkpoints; else every N (global) steps
  bool resume = false;               // continue from the output folder's latest checkpoint
  int64_t stop_after_step = 0;       // end the run after this global step's checkpoint; 0: never
  PretrainConfig pretrain;           // `linear-ard pretrain`: a random model instead of a teacher
};

// Reads YAML `path`, applies `overrides` ("key=value", dotted keys for nested maps such as
// student_rope.factor=4; values are parsed as YAML so lists and numbers keep their type) and
// validates. Throws std::invalid_argument naming the key or file at fault (unknown keys included).
RestoreConfig restore_config_load(const std::string& path, const std::vector<std::string>& overrides = {});

// The config as YAML with every key present: what `resolved_config.yaml` holds.
std::string restore_config_to_yaml(const RestoreConfig& config);

// The layer indices (ascending, non-negative) that config key `layers` names for a model with
// `num_layers` layers; throws std::invalid_argument naming the key when one is out of range.
std::vector<int64_t> restore_layers_resolve(const nlohmann::json& layers, int64_t num_layers);

}  // namespace linear_ard::train
